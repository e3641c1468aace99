package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
)

// BenchmarkProcess_1000Nodes places one 1-GPU job per iteration on a
// cluster of 1000 nodes with 8 GPUs each (the cluster fills up as it
// goes, 8 jobs per node).
func BenchmarkProcess_1000Nodes(b *testing.B) {
	h := schedtest.NewHarness(b)
	for i := range 1000 {
		h.UpsertNode(schedtest.Node(fmt.Sprintf("gpu-%04d", i), 8, "", 80))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		eval := h.RegisterJob(schedtest.GPUJob(fmt.Sprintf("job-%d", i), 1, 1))
		b.StartTimer()
		if err := h.Process(eval); err != nil {
			b.Fatalf("process: %v", err)
		}
	}
	b.StopTimer()
	if n := len(h.LiveAllocs(ns, "job-0")); n != 1 {
		b.Fatalf("job-0: got %d allocs, want 1", n)
	}
}
