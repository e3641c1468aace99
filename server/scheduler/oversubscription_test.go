package scheduler_test

import (
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// A task's memory_max reaches its allocation only when the operator
// enabled memory oversubscription (Nomad's switch): otherwise any job
// could lift its own memory limit and starve the node.
func TestMemoryMaxNeedsOversubscription(t *testing.T) {
	tests := []struct {
		name    string
		enabled bool
		want    int64
	}{
		{"off by default", false, 0},
		{"operator enabled it", true, 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			h.UpsertNode(schedtest.Node("gpu-1", 1, "", 80))
			cfg := structs.DefaultSchedulerConfiguration()
			cfg.MemoryOversubscriptionEnabled = tt.enabled
			if err := h.State.SetSchedulerConfig(h.NextIndex(), cfg); err != nil {
				t.Fatalf("set config: %v", err)
			}
			job := prioJob("big", 1, 0, 50)
			job.TaskGroups[0].Tasks[0].Resources.MemoryMaxMB = 4096
			process(t, h, h.RegisterJob(job))
			live := h.LiveAllocs(ns, "big")
			if len(live) != 1 {
				t.Fatalf("live allocations: got %d, want 1", len(live))
			}
			task := job.TaskGroups[0].Tasks[0].Name
			if got := live[0].AllocatedResources.Tasks[task].Memory.MemoryMaxMB; got != tt.want {
				t.Errorf("allocated memory_max: got %d, want %d", got, tt.want)
			}
		})
	}
}
