package feasible

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestAskCarriesMemoryMax: an allocation holds its tasks' memory and
// memory_max; only memory counts towards what the node has.
func TestAskCarriesMemoryMax(t *testing.T) {
	tg := &structs.TaskGroup{Name: "g", Tasks: []*structs.Task{
		{Name: "big", Resources: &structs.Resources{CPU: 100, MemoryMB: 256, MemoryMaxMB: 1024}},
		{Name: "plain", Resources: &structs.Resources{CPU: 100, MemoryMB: 128}},
	}}
	a := newAsk(&structs.Job{ID: "j"}, tg)
	if a.memMB != 384 {
		t.Errorf("memory asked %d MB, want 384 (memory_max is not reserved)", a.memMB)
	}
	res := a.resources(nil)
	if m := res.Tasks["big"].Memory; m.MemoryMB != 256 || m.MemoryMaxMB != 1024 {
		t.Errorf("big holds %+v, want 256 MB reserved up to 1024", m)
	}
	if m := res.Tasks["plain"].Memory; m.MemoryMB != 128 || m.MemoryMaxMB != 0 {
		t.Errorf("plain holds %+v, want 128 MB and no max", m)
	}
}
