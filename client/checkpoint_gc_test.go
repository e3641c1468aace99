package client

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestCollectCheckpoints: a job's checkpoint dir outlives its
// allocation and goes only once the servers say the job is purged; a
// dir the client did not mark, and one whose marker names another dir,
// stay.
func TestCollectCheckpoints(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	cfg := testConfig(t, srv.addr())
	cfg.GCInterval = time.Hour // collections are run by the test
	c := startClient(t, cfg)
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r == 1 })
	root := c.checkpointRoot()
	if root != filepath.Join(cfg.DataDir, "checkpoints") {
		t.Fatalf("dev checkpoint root = %q, want under the data dir", root)
	}

	kept := batchAlloc(c.NodeID(), `echo 7 > "$DROVER_CHECKPOINT_DIR/step"`)
	purged := batchAlloc(c.NodeID(), `echo 9 > "$DROVER_CHECKPOINT_DIR/step"`)
	for _, a := range []*structs.Allocation{kept, purged} {
		a.Job.TaskGroups[0].Checkpoint = &structs.CheckpointConfig{}
		srv.putAlloc(a)
	}
	for _, a := range []*structs.Allocation{kept, purged} {
		waitFor(t, "allocation complete", func() bool {
			u := srv.alloc(a.ID)
			return u != nil && u.ClientStatus == structs.AllocClientStatusComplete
		})
	}
	step := func(a *structs.Allocation) string {
		return filepath.Join(root, "default", a.JobID, "g", "0", "step")
	}
	if b, err := os.ReadFile(step(kept)); err != nil || strings.TrimSpace(string(b)) != "7" {
		t.Fatalf("checkpoint of %s = %q, %v; want 7", kept.JobID, b, err)
	}
	// Dirs GC must leave: unmarked, and marked for another job's dir.
	unmarked := filepath.Join(root, "default", "someone-elses")
	forged := filepath.Join(root, "default", "forged")
	for _, d := range []string{unmarked, forged} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	marker := `{"Namespace":"default","JobID":"` + purged.JobID + `"}`
	if err := os.WriteFile(filepath.Join(forged, ".drover-job"), []byte(marker), 0o644); err != nil {
		t.Fatal(err)
	}

	if n := c.collectCheckpoints(context.Background()); n != 0 {
		t.Fatalf("collected %d dirs while every job exists, want none", n)
	}
	srv.set(func(s *fakeServer) {
		s.purged = map[string]bool{"default/" + purged.JobID: true, "default/forged": true}
	})
	if n := c.collectCheckpoints(context.Background()); n != 1 {
		t.Fatalf("collected %d dirs, want the purged job's one", n)
	}
	if _, err := os.Stat(filepath.Join(root, "default", purged.JobID)); !os.IsNotExist(err) {
		t.Errorf("purged job's dir: %v, want it removed", err)
	}
	for _, p := range []string{step(kept), unmarked, forged} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v, want it kept", p, err)
		}
	}
}

// TestCollectCheckpointsKeepsRunningJob: a job the servers call purged
// but that runs here (purged, then registered again under the same name
// while the GC asked) keeps its dir: the GC never pulls a dir from under
// a running task.
func TestCollectCheckpointsKeepsRunningJob(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	cfg := testConfig(t, srv.addr())
	cfg.GCInterval = time.Hour
	c := startClient(t, cfg)
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r == 1 })

	a := batchAlloc(c.NodeID(), `echo 1 > "$DROVER_CHECKPOINT_DIR/step"; sleep 60`)
	a.Job.TaskGroups[0].Checkpoint = &structs.CheckpointConfig{}
	srv.putAlloc(a)
	step := filepath.Join(c.checkpointRoot(), "default", a.JobID, "g", "0", "step")
	waitFor(t, "checkpoint written", func() bool { _, err := os.Stat(step); return err == nil })
	srv.set(func(s *fakeServer) { s.purged = map[string]bool{"default/" + a.JobID: true} })
	if n := c.collectCheckpoints(context.Background()); n != 0 {
		t.Fatalf("collected %d dirs of a job running here, want none", n)
	}
	if _, err := os.Stat(step); err != nil {
		t.Fatalf("running job's checkpoint: %v, want it kept", err)
	}
}
