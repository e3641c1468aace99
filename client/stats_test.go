package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/droverhq/drover/client/devices/simulated"
	"github.com/droverhq/drover/structs"
)

func TestNodeAndAllocStats(t *testing.T) {
	fs := newFakeServer(t, time.Minute)
	cfg := testConfig(t, fs.addr())
	lib := dgxa100.New()
	cfg.NVML = lib
	cfg.SimulatedGPUs = []simulated.Config{{Count: 2}}
	nvmlGPU := lib.Devices[3].(*server.Device)
	nvmlGPU.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{Gpu: 73, Memory: 20}, nvml.SUCCESS
	}
	c := startClient(t, cfg)
	waitFor(t, "registration", func() bool { return fs.node(c.NodeID()) != nil })

	var simIDs []string
	for _, g := range c.Node().NodeResources.Devices {
		if g.Attributes[structs.DeviceAttrSimulated] == "true" {
			simIDs = g.SortedDeviceIDs()
		}
	}
	a := batchAlloc(c.NodeID(), "sleep 30", simIDs[0])
	fs.putAlloc(a)
	waitFor(t, "allocation running", func() bool {
		got := fs.alloc(a.ID)
		return got != nil && got.ClientStatus == structs.AllocClientStatusRunning
	})

	ns := c.NodeStats(context.Background())
	if ns.NodeID != c.NodeID() || ns.Timestamp == 0 {
		t.Errorf("node stats: got node %q ts %d, want %q and a timestamp", ns.NodeID, ns.Timestamp, c.NodeID())
	}
	if ns.Host == nil || ns.Host.MemoryTotalBytes == 0 || ns.Host.MemoryUsedBytes == 0 || ns.Host.CPUPercent < 0 || ns.Host.CPUPercent > 100 {
		t.Errorf("host stats: got %+v", ns.Host)
	}
	byID := map[string]*structs.DeviceStats{}
	for _, s := range ns.Devices {
		byID[s.ID] = s
	}
	if len(ns.Devices) != 10 || len(byID) != 10 {
		t.Fatalf("node stats: got %d devices, want 8 NVML + 2 simulated", len(ns.Devices))
	}
	if s := byID[nvmlGPU.UUID]; s.GPUUtilPercent != 73 || s.Simulated || s.MemoryTotalBytes != 40<<30 {
		t.Errorf("NVML GPU: got %+v, want 73%% utilisation of a 40 GiB GPU", *s)
	}
	held, free := byID[simIDs[0]], byID[simIDs[1]]
	if !held.Simulated || held.GPUUtilPercent < 50 || free.GPUUtilPercent > 5 {
		t.Errorf("simulated: held %.1f%%, free %.1f%%; want the held one busy, the free one idle", held.GPUUtilPercent, free.GPUUtilPercent)
	}

	as, err := c.AllocStats(a.ID)
	if err != nil {
		t.Fatalf("AllocStats: %v", err)
	}
	if as.AllocID != a.ID || len(as.Devices) != 1 || as.Devices[0].ID != simIDs[0] {
		t.Errorf("alloc stats: got %+v, want the one GPU %s", as, simIDs[0])
	}
	if _, err := c.AllocStats("nope"); !errors.Is(err, ErrUnknownAlloc) || !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("unknown alloc: got %v, want ErrUnknownAlloc", err)
	}
}

func TestReadHostStats(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, "proc", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stat", "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 1 2 3 4\n")
	write("meminfo", "MemTotal:       2048 kB\nMemFree:   100 kB\nMemAvailable:    512 kB\n")
	write("uptime", "12345.67 999.0\n")
	got, err := readHostStats(context.Background(), root, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// The file does not change in the window: no CPU time passed.
	want := structs.HostStats{CPUPercent: 0, MemoryTotalBytes: 2048 << 10, MemoryUsedBytes: 1536 << 10, UptimeSeconds: 12345}
	if *got != want {
		t.Errorf("got %+v, want %+v", *got, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := readHostStats(ctx, root, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
}

func TestCPUPercent(t *testing.T) {
	tests := []struct {
		name          string
		before, after string
		want          float64
	}{
		{"quarter busy", "cpu 100 0 100 800 0 0 0 0", "cpu 150 0 100 950 0 0 0 0", 25},
		{"iowait is idle", "cpu 0 0 0 0 0 0 0 0", "cpu 10 0 0 0 30 0 0 0", 25},
		{"guest not counted twice", "cpu 0 0 0 0 0 0 0 0 0 0", "cpu 50 0 0 50 0 0 0 0 50 0", 50},
		{"no time passed", "cpu 1 1 1 1", "cpu 1 1 1 1", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := parseCPULine(tt.before)
			if err != nil {
				t.Fatal(err)
			}
			a, err := parseCPULine(tt.after)
			if err != nil {
				t.Fatal(err)
			}
			if got := cpuPercent(b, a); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := parseCPULine("intr 1 2 3"); err == nil {
		t.Error("parseCPULine accepted a non-cpu line")
	}
	if _, _, err := parseMemInfo("MemTotal: 10 kB\n"); err == nil {
		t.Error("parseMemInfo accepted meminfo without MemAvailable")
	}
}
