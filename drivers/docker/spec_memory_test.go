package docker

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestCreateOptionsMemoryMax: a task with memory_max gets its memory as
// the container's reservation and memory_max as its limit; without it
// memory is the limit and nothing is reserved.
func TestCreateOptionsMemoryMax(t *testing.T) {
	tests := []struct {
		name                 string
		mem, max             int64
		wantLimit, wantReser int64
	}{
		{"memory only", 256, 0, 256 << 20, 0},
		{"memory_max", 256, 1024, 1024 << 20, 256 << 20},
		{"memory_max equal to memory", 256, 256, 256 << 20, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := specTask(map[string]any{"image": "img"})
			cfg.Resources = &structs.AllocatedTaskResources{Memory: structs.AllocatedMemoryResources{MemoryMB: tt.mem, MemoryMaxMB: tt.max}}
			opts, err := CreateOptions(cfg, Config{})
			if err != nil {
				t.Fatal(err)
			}
			if h := opts.HostConfig; h.Memory != tt.wantLimit || h.MemoryReservation != tt.wantReser {
				t.Errorf("Memory %d, MemoryReservation %d; want %d, %d", h.Memory, h.MemoryReservation, tt.wantLimit, tt.wantReser)
			}
		})
	}
}

// TestDockerMemoryMaxReachesEngine: a container of a task with
// memory_max runs with the reservation and the limit set in the engine.
func TestDockerMemoryMaxReachesEngine(t *testing.T) {
	image := testImage(t)
	d := New(nil, Config{})
	cfg := helloTask(t, image, "echo:hi")
	cfg.Resources = &structs.AllocatedTaskResources{Memory: structs.AllocatedMemoryResources{MemoryMB: 64, MemoryMaxMB: 128}}
	h := start(t, d, cfg)
	if res := waitExit(t, d, cfg.ID); !res.Successful() {
		t.Fatalf("result = %v, want success", res)
	}
	info, found := inspect(t, d, h.State[StateContainerID])
	if !found {
		t.Fatal("container gone before Destroy")
	}
	if hc := info.Container.HostConfig; hc.Memory != 128<<20 || hc.MemoryReservation != 64<<20 {
		t.Errorf("engine has Memory %d, MemoryReservation %d; want %d, %d", hc.Memory, hc.MemoryReservation, 128<<20, 64<<20)
	}
}
