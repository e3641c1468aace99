package plan

import (
	"sync"
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics"

	"github.com/droverhq/drover/structs"
)

// tickClock returns a clock that moves 1ms on every reading.
func tickClock() func() time.Time {
	var mu sync.Mutex
	t := time.Unix(1700000000, 0)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Millisecond)
		return t
	}
}

// planSamples installs an in-memory go-metrics sink as the global one
// for the test and returns a reader of its drover.plan.* samples.
func planSamples(t *testing.T) func() map[string]metrics.SampledValue {
	t.Helper()
	inm := metrics.NewInmemSink(time.Hour, time.Hour)
	cfg := metrics.DefaultConfig("drover")
	cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
	if _, err := metrics.NewGlobal(cfg, inm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = metrics.NewGlobal(cfg, &metrics.BlackholeSink{}) })
	return func() map[string]metrics.SampledValue {
		out := map[string]metrics.SampledValue{}
		for _, iv := range inm.Data() {
			iv.RLock()
			for _, k := range []string{"apply", "evaluate", "commit"} {
				if v, ok := iv.Samples["drover.plan."+k]; ok {
					out[k] = v
				}
			}
			iv.RUnlock()
		}
		return out
	}
}

// TestApplier_Timings: a committed plan records drover.plan.apply (its
// dequeue to its answer), .evaluate (the re-check) and .commit (the Raft
// apply alone) on the applier's clock; a plan with nothing to commit
// records no commit.
func TestApplier_Timings(t *testing.T) {
	samples := planSamples(t)
	h := newHarnessWith(t, []Option{WithNow(tickClock())}, gpuNode("n1", 2))
	h.submit(t, &structs.Plan{EvalID: "e1", NodeAllocation: placements(h.alloc("a1", "n1", 100, gpuID("n1", 0)))})
	got := samples()
	for _, k := range []string{"apply", "evaluate", "commit"} {
		if got[k].Count != 1 || got[k].Sum <= 0 {
			t.Fatalf("drover.plan.%s = %d samples summing %vms, want 1 above 0", k, got[k].Count, got[k].Sum)
		}
	}
	if apply, parts := got["apply"].Sum, got["evaluate"].Sum+got["commit"].Sum; apply <= parts {
		t.Errorf("drover.plan.apply = %vms, want more than evaluate + commit = %vms", apply, parts)
	}

	h.submit(t, &structs.Plan{EvalID: "e2"})
	got = samples()
	if got["apply"].Count != 2 || got["evaluate"].Count != 2 || got["commit"].Count != 1 {
		t.Errorf("after a no-op plan: apply %d, evaluate %d, commit %d samples; want 2, 2, 1",
			got["apply"].Count, got["evaluate"].Count, got["commit"].Count)
	}
}
