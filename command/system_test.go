package command

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/structs"
)

// TestSystemGC runs two batch jobs to completion on a real dev agent,
// purges one, and collects with `drover system gc`: both jobs'
// allocations, evaluations and alloc dirs and the dead job are gone, a
// running job is kept.
func TestSystemGC(t *testing.T) {
	dataDir := drivertest.ReachableTempDir(t)
	addr := startDevAgentIn(t, dataDir)
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

	before, _, err := c.Allocations().List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	allocDir := func(id string) string { return filepath.Join(dataDir, "client", "alloc", id) }
	for _, a := range before {
		if _, err := os.Stat(allocDir(a.ID)); err != nil {
			t.Fatalf("alloc dir of %s before gc: %v", a.JobID, err)
		}
	}

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
	for _, a := range before {
		eventually(t, 10*time.Second, "alloc dir of "+a.JobID+" removed", func() bool {
			_, err := os.Stat(allocDir(a.ID))
			return a.JobID == "sleeper" || os.IsNotExist(err)
		})
		if _, err := os.Stat(allocDir(a.ID)); a.JobID == "sleeper" && err != nil {
			t.Errorf("running allocation's dir: %v", err)
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
