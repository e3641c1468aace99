package server

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestSnapshot_RestoreIntoThreeServers restores a snapshot into a fresh
// three-server cluster through a follower (forwarded to the leader):
// every server gets the state, a save through a follower returns it, and
// after the leader is killed its successor has it and schedules on it.
func TestSnapshot_RestoreIntoThreeServers(t *testing.T) {
	t.Parallel()
	src := populated(t)
	want := clusterState(t, src)
	archive := saveArchive(t, src).Archive

	c := newTestCluster(t, 3)
	follower := c.Followers()[0]
	var resp SnapshotRestoreResponse
	if err := follower.RPC(RPCSnapshotRestore, &SnapshotRestoreRequest{Archive: archive}, &resp); err != nil {
		t.Fatalf("Snapshot.Restore through a follower: %v", err)
	}
	for _, i := range c.reachable() {
		s := c.Server(i)
		waitFor(t, 10*time.Second, func() (bool, string) {
			got := clusterState(t, s)
			return slices.Equal(got, want), c.Name(i) + " state:\n" + strings.Join(got, "\n")
		})
	}

	var saved SnapshotSaveResponse
	if err := c.Followers()[0].RPC(RPCSnapshotSave, &SnapshotSaveRequest{}, &saved); err != nil {
		t.Fatalf("Snapshot.Save through a follower: %v", err)
	}
	if saved.Meta.Index < resp.Index {
		t.Errorf("saved snapshot at index %d, before the restore at %d", saved.Meta.Index, resp.Index)
	}

	old := c.Leader()
	c.Kill(c.Index(old))
	leader := c.WaitForLeader(10 * time.Second)
	if got := clusterState(t, leader); !slices.Equal(got, want) {
		t.Errorf("new leader's state:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	registerJob(t, leader, gpuJob("after", structs.JobTypeService, 1, 2))
	settled(t, leader, map[string]int{"after": 1, "train": 3, "infer": 2})
}
