package command

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestSystemGC runs two batch jobs to completion on a real dev agent,
// purges one, and collects with `drover system gc`: both jobs'
// allocations and evaluations and the dead job are gone, a running job
// is kept.
func TestSystemGC(t *testing.T) {
	addr := startDevAgent(t)
	c := apiClient(t, addr)
	ctx := context.Background()
	for _, id := range []string{"done", "purged"} {
		if _, _, err := c.Jobs().Register(ctx, batchJob(id, 0), nil); err != nil {
			t.Fatalf("register %s: %v", id, err)
		}
	}
	sleeper := batchJob("sleeper", 0)
	sleeper.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []string{"60"}}
	if _, _, err := c.Jobs().Register(ctx, sleeper, nil); err != nil {
		t.Fatalf("register sleeper: %v", err)
	}
	eventually(t, 20*time.Second, "finished allocations of done and purged, sleeper running", func() bool {
		allocs, _, err := c.Allocations().List(ctx, nil)
		if err != nil {
			return false
		}
		finished, running := 0, 0
		for _, a := range allocs {
			switch {
			case a.JobID == "sleeper" && a.ClientStatus == structs.AllocClientStatusRunning:
				running++
			case a.JobID != "sleeper" && a.ClientStatus == structs.AllocClientStatusComplete:
				finished++
			}
		}
		return finished == 2 && running == 1
	})
	if _, _, err := c.Jobs().Deregister(ctx, "purged", true, nil); err != nil {
		t.Fatalf("purge: %v", err)
	}
	eventually(t, 10*time.Second, "the purge's evaluation done", func() bool {
		evals, _, err := c.Evaluations().List(ctx, nil)
		if err != nil {
			return false
		}
		for _, e := range evals {
			if !e.TerminalStatus() {
				return false
			}
		}
		return true
	})

	code, out, errOut := run(t, addr, "system", "gc")
	if code != 0 || !strings.Contains(out, "Garbage collection done") {
		t.Fatalf("system gc = %d, %q, %q", code, out, errOut)
	}
	allocs, _, err := c.Allocations().List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(allocs) != 1 || allocs[0].JobID != "sleeper" {
		t.Errorf("allocations after gc: %d (%v), want only the sleeper's", len(allocs), allocs)
	}
	evals, _, err := c.Evaluations().List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evals {
		if e.JobID != "sleeper" {
			t.Errorf("evaluation %s of job %s kept after gc", e.ID, e.JobID)
		}
	}
	jobs, _, err := c.Jobs().List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != "sleeper" {
		t.Errorf("jobs after gc: %d, want only sleeper", len(jobs))
	}
}
