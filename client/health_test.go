package client

import (
	"errors"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/droverhq/drover/client/devices/simulated"
	"github.com/droverhq/drover/structs"
)

// serverDevice returns instance id as the fake server last stored it.
func serverDevice(fs *fakeServer, nodeID, id string) *structs.NodeDevice {
	n := fs.node(nodeID)
	if n == nil || n.NodeResources == nil {
		return nil
	}
	for _, g := range n.NodeResources.Devices {
		for _, inst := range g.Instances {
			if inst.ID == id {
				return inst
			}
		}
	}
	return nil
}

func TestSetDeviceHealthSimulated(t *testing.T) {
	fs := newFakeServer(t, time.Minute)
	c := startClient(t, testConfig(t, fs.addr()))
	waitFor(t, "registration", func() bool { return fs.node(c.NodeID()) != nil })
	gpu := c.Node().NodeResources.Devices[0].Instances[1].ID

	tests := []struct {
		name     string
		healthy  bool
		reason   string
		wantDesc string
	}{
		{"fail", false, "XID 79 (simulated)", "XID 79 (simulated)"},
		{"recover", true, "", simulated.HealthDescription},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.SetDeviceHealth(gpu, tt.healthy, tt.reason); err != nil {
				t.Fatalf("SetDeviceHealth: %v", err)
			}
			// SetDeviceHealth returns once the server has the node.
			got := serverDevice(fs, c.NodeID(), gpu)
			if got == nil || got.Healthy != tt.healthy || got.HealthDescription != tt.wantDesc {
				t.Fatalf("server sees %+v, want healthy=%v %q", got, tt.healthy, tt.wantDesc)
			}
			if _, healthy := c.Node().GPUCount(); healthy != map[bool]int{true: 2, false: 1}[tt.healthy] {
				t.Errorf("client node has %d healthy GPUs", healthy)
			}
		})
	}
}

func TestSetDeviceHealthErrors(t *testing.T) {
	fs := newFakeServer(t, time.Minute)
	cfg := testConfig(t, fs.addr())
	cfg.NVML = dgxa100.New()
	cfg.SimulatedGPUs = []simulated.Config{{Count: 1}}
	c := startClient(t, cfg)
	nvmlGPU := cfg.NVML.(*server.Server).Devices[0].(*server.Device).UUID
	tests := []struct {
		name string
		id   string
		want error
	}{
		{"unknown", "GPU-nope", structs.ErrNotFound},
		{"NVML GPU", nvmlGPU, structs.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.SetDeviceHealth(tt.id, false, "x"); !errors.Is(err, tt.want) {
				t.Errorf("SetDeviceHealth(%s) = %v, want %v", tt.id, err, tt.want)
			}
		})
	}
}

// TestNVMLXIDReachesServer injects XID 79 on GPU 6 of the DGX A100 mock
// through its event set: the client re-registers the node with that GPU
// unhealthy.
func TestNVMLXIDReachesServer(t *testing.T) {
	lib := dgxa100.New()
	events := make(chan nvml.EventData, 1)
	set := &mock.EventSet{
		WaitFunc: func(ms uint32) (nvml.EventData, nvml.Return) {
			select {
			case ev := <-events:
				return ev, nvml.SUCCESS
			case <-time.After(time.Duration(ms) * time.Millisecond):
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
		},
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
	}
	lib.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return set, nvml.SUCCESS }
	for _, d := range lib.Devices {
		d.(*server.Device).RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
	}
	fs := newFakeServer(t, time.Minute)
	cfg := testConfig(t, fs.addr())
	cfg.NVML = lib
	c := startClient(t, cfg)
	waitFor(t, "registration", func() bool { return fs.node(c.NodeID()) != nil })
	gpu := lib.Devices[6].(*server.Device)
	events <- nvml.EventData{Device: gpu, EventType: nvml.EventTypeXidCriticalError, EventData: 79}
	waitFor(t, "GPU 6 unhealthy on the server", func() bool {
		d := serverDevice(fs, c.NodeID(), gpu.UUID)
		return d != nil && !d.Healthy && d.HealthDescription == "XID 79: GPU has fallen off the bus"
	})
	if total, healthy := fs.node(c.NodeID()).GPUCount(); total != 8 || healthy != 7 {
		t.Errorf("server node GPUs = %d (%d healthy), want 8 (7 healthy)", total, healthy)
	}
}
