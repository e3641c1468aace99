package client

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/droverhq/drover/client/allocrunner"
	"github.com/droverhq/drover/structs"
)

// TestCollectAllocs: over gc_max_allocs the oldest finished allocations
// go first (runner, state and dir); an allocation the servers drop goes
// once its tasks are dead; over the disk threshold every finished one
// goes; a running task's allocation is never touched.
func TestCollectAllocs(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	cfg := testConfig(t, srv.addr())
	cfg.GCInterval = time.Hour // collections are run by the test
	cfg.GCMaxAllocs = 2
	cfg.GCDiskUsageThreshold = 100
	// A dir a previous agent moved to the trash and did not remove
	// goes at start.
	leftover := filepath.Join(trashDir(cfg.DataDir), "left-by-a-dead-agent")
	if err := os.MkdirAll(filepath.Join(leftover, "alloc", "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := startClient(t, cfg)
	waitFor(t, "leftover trash removed", func() bool { return trashEmpty(t, c) })
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r == 1 })

	finish := func(a *structs.Allocation) {
		t.Helper()
		srv.putAlloc(a)
		waitFor(t, "alloc finished and known terminal", func() bool {
			c.allocMu.Lock()
			defer c.allocMu.Unlock()
			r := c.runners[a.ID]
			return r != nil && r.serverTerminal && isClosed(r.ar.WaitCh())
		})
	}
	t0 := time.Now()
	first := batchAlloc(c.NodeID(), "exit 0")
	finish(first)
	if n := c.collectAllocs(context.Background(), t0); n != 0 {
		t.Fatalf("collected %d allocations under gc_max_allocs, want none", n)
	}
	sleeper := batchAlloc(c.NodeID(), "exec sleep 30")
	srv.putAlloc(sleeper)
	waitFor(t, "sleeper running", func() bool { return srv.alloc(sleeper.ID).ClientStatus == structs.AllocClientStatusRunning })
	second, third := batchAlloc(c.NodeID(), "exit 0"), batchAlloc(c.NodeID(), "exit 0")
	finish(second)
	finish(third)

	if n := c.collectAllocs(context.Background(), t0.Add(time.Second)); n != 2 {
		t.Fatalf("collected %d allocations of 4 with gc_max_allocs 2, want 2", n)
	}
	if allocKept(t, c, first.ID) {
		t.Errorf("the oldest finished allocation was kept")
	}
	if allocKept(t, c, second.ID) == allocKept(t, c, third.ID) {
		t.Errorf("want exactly one of the two newer finished allocations kept")
	}
	if !allocKept(t, c, sleeper.ID) {
		t.Fatalf("the running allocation was collected")
	}

	// The servers collect a finished allocation: the client forgets it.
	kept := second
	if !allocKept(t, c, kept.ID) {
		kept = third
	}
	srv.set(func(s *fakeServer) { delete(s.allocs, kept.ID); s.bumpLocked() })
	waitFor(t, "allocation dropped by the servers destroyed", func() bool { return !allocKept(t, c, kept.ID) })

	// Over the disk threshold every finished allocation goes, never a
	// running one.
	fourth := batchAlloc(c.NodeID(), "exit 0")
	finish(fourth)
	c.allocMu.Lock()
	c.cfg.GCDiskUsageThreshold = 1e-9
	c.allocMu.Unlock()
	c.collectAllocs(context.Background(), t0.Add(2*time.Second))
	if allocKept(t, c, fourth.ID) {
		t.Errorf("finished allocation kept over the disk threshold")
	}
	if !allocKept(t, c, sleeper.ID) || srv.alloc(sleeper.ID).ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("the running allocation was collected over the disk threshold")
	}
	// Destroyed dirs went to the trash; gcLoop removes them without
	// waiting for its next tick (an hour away).
	waitFor(t, "trash emptied", func() bool { return trashEmpty(t, c) })

	// A dir no allocation owns (left by an agent that lost its state)
	// goes once the client follows the servers' allocations.
	stale := allocrunner.AllocDir(c.cfg.DataDir, "no-such-alloc")
	if err := os.MkdirAll(filepath.Join(stale, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Not after an orphan sweep that failed: a task may run there.
	c.allocMu.Lock()
	c.sweepFailed = true
	c.allocMu.Unlock()
	c.collectAllocs(context.Background(), t0.Add(3*time.Second))
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("stale alloc dir after a failed orphan sweep: %v, want kept", err)
	}
	c.allocMu.Lock()
	c.sweepFailed = false
	c.allocMu.Unlock()
	c.collectAllocs(context.Background(), t0.Add(3*time.Second))
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale alloc dir after a collection: %v, want gone", err)
	}
	if !allocKept(t, c, sleeper.ID) {
		t.Fatalf("the running allocation's dir was taken for stale")
	}
	waitFor(t, "trash emptied", func() bool { return trashEmpty(t, c) })
}

func trashEmpty(t *testing.T, c *Client) bool {
	t.Helper()
	entries, err := os.ReadDir(trashDir(c.cfg.DataDir))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(entries) == 0
}

// allocKept reports whether the client still has the allocation: its
// runner, its state and its dir. It fails the test on a partial removal.
func allocKept(t *testing.T, c *Client, id string) bool {
	t.Helper()
	c.allocMu.Lock() // collections change all three under it
	defer c.allocMu.Unlock()
	runner := c.runners[id] != nil
	_, err := os.Stat(allocrunner.AllocDir(c.cfg.DataDir, id))
	dir := err == nil
	stored, _, err := c.db.GetAllocs()
	if err != nil {
		t.Fatal(err)
	}
	inDB := false
	for _, s := range stored {
		inDB = inDB || s.Alloc.ID == id
	}
	if runner != dir || runner != inDB {
		t.Fatalf("alloc %s: runner %v, dir %v, state %v; want all or none", id, runner, dir, inDB)
	}
	return runner
}
