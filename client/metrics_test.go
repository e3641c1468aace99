package client

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/droverhq/drover/client/devices/simulated"
	"github.com/droverhq/drover/structs"
)

// series gathers the collector and returns name -> the label sets (empty
// labels left out) and values of its series.
func series(t *testing.T, c prometheus.Collector) map[string][]sample {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string][]sample{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			s := sample{labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				if l.GetValue() != "" {
					s.labels[l.GetName()] = l.GetValue()
				}
			}
			s.value = value(m)
			out[f.GetName()] = append(out[f.GetName()], s)
		}
	}
	return out
}

type sample struct {
	labels map[string]string
	value  float64
}

func value(m *dto.Metric) float64 {
	if m.Gauge != nil {
		return m.Gauge.GetValue()
	}
	return m.Counter.GetValue()
}

// TestMetricsCollector runs an allocation on a simulated GPU and checks
// the GPU series carry its labels while it runs and lose them when it
// ends, and the allocation and node figures.
func TestMetricsCollector(t *testing.T) {
	fs := newFakeServer(t, time.Minute)
	cfg := testConfig(t, fs.addr())
	cfg.SimulatedGPUs = []simulated.Config{{Count: 2}}
	c := startClient(t, cfg)
	waitFor(t, "registration", func() bool { return fs.node(c.NodeID()) != nil })
	var ids []string
	for _, g := range c.Node().NodeResources.Devices {
		ids = append(ids, g.SortedDeviceIDs()...)
	}
	if len(ids) != 2 {
		t.Fatalf("node has GPUs %v, want 2 simulated", ids)
	}
	gate := filepath.Join(t.TempDir(), "done")
	a := batchAlloc(c.NodeID(), "while [ ! -e "+gate+" ]; do sleep 0.05; done", ids[0])
	fs.putAlloc(a)
	waitFor(t, "allocation running", func() bool {
		got := fs.alloc(a.ID)
		return got != nil && got.ClientStatus == structs.AllocClientStatusRunning
	})
	col := c.MetricsCollector()
	got := series(t, col)
	util := got["DCGM_FI_DEV_GPU_UTIL"]
	if len(util) != 2 {
		t.Fatalf("DCGM_FI_DEV_GPU_UTIL has %d series, want one per GPU: %+v", len(util), util)
	}
	byUUID := map[string]sample{}
	for _, s := range util {
		byUUID[s.labels["UUID"]] = s
	}
	held, free := byUUID[ids[0]], byUUID[ids[1]]
	node := c.Node()
	want := map[string]string{
		"UUID": ids[0], "gpu": held.labels["gpu"], "device": "nvidia" + held.labels["gpu"], "modelName": simulated.DefaultModel,
		"Hostname": node.Name, "node_id": node.ID, "namespace": a.Namespace, "job": a.JobID, "task_group": "g",
		"alloc_id": a.ID, "task": "t", "simulated": "true",
	}
	if _, inst := node.Instance(ids[0]); inst != nil && inst.Locality != nil {
		want["pci_bus_id"] = inst.Locality.PciBusID
	}
	if !sameLabels(held.labels, want) || held.value < 50 {
		t.Errorf("held GPU series = %v %v, want labels %v and a busy GPU", held.labels, held.value, want)
	}
	if free.labels["alloc_id"] != "" || free.labels["simulated"] != "true" || free.value > 5 {
		t.Errorf("free GPU series = %v %v, want no allocation and an idle GPU", free.labels, free.value)
	}
	for _, name := range []string{"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"} {
		if len(got[name]) != 2 {
			t.Errorf("%s has %d series, want 2", name, len(got[name]))
		}
	}
	checkOne(t, got, "drover_alloc_gpus_allocated", a.ID, 1)
	checkOne(t, got, "drover_alloc_cpu_allocated_mhz", a.ID, 100)
	if s := got["drover_alloc_gpus_used"]; len(s) != 1 || s[0].value < 0.5 || s[0].value > 1 {
		t.Errorf("drover_alloc_gpus_used = %+v, want one busy GPU's share", s)
	}
	if s := got["drover_node_gpus_allocated"]; len(s) != 1 || s[0].value != 1 || s[0].labels["node_id"] != node.ID {
		t.Errorf("drover_node_gpus_allocated = %+v, want 1 on %s", s, node.ID)
	}
	if s := got["drover_node_memory_total_bytes"]; len(s) != 1 || s[0].value <= 0 {
		t.Errorf("drover_node_memory_total_bytes = %+v, want the host's memory", s)
	}

	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "allocation complete", func() bool {
		got := fs.alloc(a.ID)
		return got != nil && got.ClientStatus == structs.AllocClientStatusComplete
	})
	after := series(t, c.MetricsCollector())
	for _, s := range after["DCGM_FI_DEV_GPU_UTIL"] {
		if s.labels["alloc_id"] != "" {
			t.Errorf("after the allocation ended, a GPU series still names it: %v", s.labels)
		}
	}
	if n := len(after["DCGM_FI_DEV_GPU_UTIL"]); n != 2 {
		t.Errorf("after: %d GPU series, want 2", n)
	}
	if s := after["drover_alloc_gpus_allocated"]; len(s) != 0 {
		t.Errorf("after: drover_alloc_gpus_allocated = %+v, want no series", s)
	}
}

func sameLabels(got, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func checkOne(t *testing.T, got map[string][]sample, name, allocID string, want float64) {
	t.Helper()
	s := got[name]
	if len(s) != 1 || s[0].labels["alloc_id"] != allocID || s[0].value != want {
		t.Errorf("%s = %+v, want one series of %s at %v", name, s, allocID, want)
	}
}

func TestLastXID(t *testing.T) {
	tests := []struct {
		name string
		inst structs.NodeDevice
		want float64
	}{
		{"healthy", structs.NodeDevice{Healthy: true, HealthDescription: "healthy"}, 0},
		{"xid", structs.NodeDevice{HealthDescription: "XID 79: GPU has fallen off the bus"}, 79},
		{"other reason", structs.NodeDevice{HealthDescription: "unhealthy (simulated)"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lastXID(&tt.inst); got != tt.want {
				t.Errorf("lastXID = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestGPUSeriesSharedGPU: a GPU two allocations hold slices of is one
// series per holder, each naming the sharing mode; a whole GPU names
// none; a GPU nobody holds has no allocation labels.
func TestGPUSeriesSharedGPU(t *testing.T) {
	node := &structs.Node{ID: "node-1", Name: "n1", NodeResources: &structs.NodeResources{Devices: []*structs.NodeDeviceResource{{
		Vendor: "nvidia", Type: "gpu", Name: "NVIDIA A100",
		Attributes: map[string]string{structs.DeviceAttrSharing: structs.SharingMPS},
		Instances:  []*structs.NodeDevice{{ID: "GPU-a", Healthy: true}, {ID: "GPU-b", Healthy: true}, {ID: "GPU-c", Healthy: true}},
	}}}}
	alloc := func(id string, dev *structs.AllocatedDeviceResource) *structs.Allocation {
		return &structs.Allocation{ID: id, Namespace: "default", JobID: "j-" + id, TaskGroup: "g", AllocatedResources: &structs.AllocatedResources{
			Tasks: map[string]*structs.AllocatedTaskResources{"t": {Devices: []*structs.AllocatedDeviceResource{dev}}}}}
	}
	allocs := []*structs.Allocation{
		alloc("a1", &structs.AllocatedDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "NVIDIA A100", DeviceIDs: []string{"GPU-a"}, Compute: 50}),
		alloc("a2", &structs.AllocatedDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "NVIDIA A100", DeviceIDs: []string{"GPU-a"}, Compute: 25}),
		alloc("a3", &structs.AllocatedDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "NVIDIA A100", DeviceIDs: []string{"GPU-b"}}),
	}
	stats := map[string]*structs.DeviceStats{"GPU-a": {ID: "GPU-a", GPUUtilPercent: 40, MemoryUsedBytes: 1 << 30, MemoryTotalBytes: 4 << 30}}
	got := gpuSeries(node, allocs, stats)
	type key struct{ uuid, alloc, sharing, device string }
	var keys []key
	for _, g := range got {
		keys = append(keys, key{g.UUID, g.AllocID, g.Sharing, g.Device})
	}
	want := []key{{"GPU-a", "a1", "mps", "nvidia0"}, {"GPU-a", "a2", "mps", "nvidia0"}, {"GPU-b", "a3", "", "nvidia1"}, {"GPU-c", "", "", "nvidia2"}}
	if len(keys) != len(want) {
		t.Fatalf("series %+v, want %+v", keys, want)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Errorf("series %d = %+v, want %+v", i, keys[i], want[i])
		}
	}
	if a := got[0]; a.UtilPercent != 40 || a.FBUsedMiB != 1024 || a.FBFreeMiB != 3072 || a.Job != "j-a1" || a.Task != "t" {
		t.Errorf("GPU-a figures = %+v, want 40%%, 1024 MiB used, 3072 MiB free, job j-a1 task t", a)
	}
}
