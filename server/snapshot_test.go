package server

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/server/snapshot"
	"github.com/droverhq/drover/structs"
)

// settled waits until no evaluation is pending and every job in want has
// its live allocation count.
func settled(t *testing.T, s *Server, want map[string]int) {
	t.Helper()
	waitFor(t, 10*time.Second, func() (bool, string) {
		evals, err := s.State().Evals(nil, "*")
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(evals, func(e *structs.Evaluation) bool { return e.Status == structs.EvalStatusPending }); i >= 0 {
			return false, "eval " + evals[i].ID + " still pending"
		}
		for job, n := range want {
			if got := len(liveAllocs(t, s, job)); got != n {
				return false, fmt.Sprintf("job %s has %d live allocations, want %d", job, got, n)
			}
		}
		return true, ""
	})
}

// clusterState lists the jobs, allocations and nodes with the fields a
// snapshot must carry.
func clusterState(t *testing.T, s *Server) []string {
	t.Helper()
	st := s.State()
	var out []string
	nodes, err := st.Nodes(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		out = append(out, fmt.Sprintf("node %s %s %s gpus=%d", n.ID, n.Name, n.Status, len(n.NodeResources.Devices[0].Instances)))
	}
	jobs, err := st.Jobs(nil, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		out = append(out, fmt.Sprintf("job %s v%d %s %s count=%d", j.ID, j.Version, j.Type, j.Status, j.TaskGroups[0].Count))
	}
	allocs, err := st.Allocs(nil, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range allocs {
		out = append(out, fmt.Sprintf("alloc %s %s node=%s %s/%s gpus=%s", a.ID, a.JobID, a.NodeID, a.DesiredStatus, a.ClientStatus, strings.Join(a.DeviceIDs(), ",")))
	}
	slices.Sort(out)
	return out
}

func TestSnapshot_ThresholdCompactsAndRestarts(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.RaftSnapshotThreshold = 16
	cfg.RaftSnapshotInterval = 20 * time.Millisecond
	cfg.RaftTrailingLogs = 4
	s := startServer(t, cfg)
	c := dialRPC(t, s.RPCAddr())
	registerNode(t, c, gpuNode("n1", 16))
	want := map[string]int{}
	for i := range 12 {
		id := fmt.Sprintf("job-%02d", i)
		registerJob(t, s, gpuJob(id, structs.JobTypeService, 1, 1))
		want[id] = 1
	}
	settled(t, s, want)

	// Raft snapshots on its own once 16 entries piled up, and compacts
	// the log down to the trailing 4.
	var first uint64
	waitFor(t, 10*time.Second, func() (bool, string) {
		var err error
		if first, err = s.raftStore.FirstIndex(); err != nil {
			t.Fatal(err)
		}
		snap := s.raft.Stats()["last_snapshot_index"]
		return snap != "0" && first > 1, fmt.Sprintf("last snapshot index %s, first log index %d", snap, first)
	})
	job, err := s.State().JobByID(nil, structs.DefaultNamespace, "job-00")
	if err != nil || job == nil {
		t.Fatalf("job-00: %v %v", job, err)
	}
	if job.CreateIndex >= first {
		t.Fatalf("job-00 created at index %d, still in the log (first index %d): the restart would not need the snapshot", job.CreateIndex, first)
	}
	before := clusterState(t, s)
	_ = c.Close()
	if err := s.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	// job-00's entry is gone from the log: only the snapshot has it.
	cfg.RPCAddr = s.RPCAddr().(*net.TCPAddr)
	s2 := startServer(t, cfg)
	if after := clusterState(t, s2); !slices.Equal(after, before) {
		t.Errorf("state after restart:\n%s\nwant:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
}

// saveArchive saves a snapshot of s through the RPC endpoint.
func saveArchive(t *testing.T, s *Server) *SnapshotSaveResponse {
	t.Helper()
	var resp SnapshotSaveResponse
	if err := s.RPC(RPCSnapshotSave, &SnapshotSaveRequest{}, &resp); err != nil {
		t.Fatalf("Snapshot.Save: %v", err)
	}
	return &resp
}

// populated starts a server with two GPU nodes, and jobs placed on them.
func populated(t *testing.T) *Server {
	t.Helper()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	registerNode(t, c, gpuNode("n1", 8))
	registerNode(t, c, gpuNode("n2", 8))
	registerJob(t, s, gpuJob("train", structs.JobTypeService, 3, 2))
	registerJob(t, s, gpuJob("infer", structs.JobTypeService, 2, 1))
	settled(t, s, map[string]int{"train": 3, "infer": 2})
	return s
}

func TestSnapshot_SaveRestoreOnFreshServer(t *testing.T) {
	t.Parallel()
	src := populated(t)
	want := clusterState(t, src)
	resp := saveArchive(t, src)
	if resp.Meta.Index == 0 || resp.Meta.Size == 0 || len(resp.Archive) == 0 {
		t.Fatalf("save: meta %+v, %d bytes", resp.Meta, len(resp.Archive))
	}

	dst := startServer(t, testConfig(t))
	registerJob(t, dst, gpuJob("replaced", structs.JobTypeBatch, 1, 0))
	var rresp SnapshotRestoreResponse
	if err := dst.RPC(RPCSnapshotRestore, &SnapshotRestoreRequest{Archive: resp.Archive}, &rresp); err != nil {
		t.Fatalf("Snapshot.Restore: %v", err)
	}
	if rresp.Meta.Index != resp.Meta.Index || rresp.Index <= resp.Meta.Index {
		t.Errorf("restore: meta index %d, cluster index %d; want %d and above it", rresp.Meta.Index, rresp.Index, resp.Meta.Index)
	}
	if got := clusterState(t, dst); !slices.Equal(got, want) {
		t.Errorf("state after restore:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The leader's duties run again on the restored state: a new job is
	// placed on the restored nodes, next to the restored allocations.
	waitFor(t, 10*time.Second, func() (bool, string) {
		return dst.IsLeader() && dst.broker.Enabled(), "no working leader after restore"
	})
	registerJob(t, dst, gpuJob("after", structs.JobTypeService, 1, 2))
	settled(t, dst, map[string]int{"after": 1, "train": 3, "infer": 2})
	used := map[string]string{}
	for _, job := range []string{"after", "train", "infer"} {
		for _, a := range liveAllocs(t, dst, job) {
			for _, id := range a.DeviceIDs() {
				if other, ok := used[id]; ok {
					t.Errorf("GPU %s held by %s and %s", id, other, a.ID)
				}
				used[id] = a.ID
			}
		}
	}
}

func TestSnapshot_RestoreRefusesDamagedArchive(t *testing.T) {
	t.Parallel()
	src := populated(t)
	archive := saveArchive(t, src).Archive

	garbage := []byte("not an FSM stream, but checksummed correctly")
	var badState bytes.Buffer
	if err := snapshot.Write(&badState, snapshot.Meta{Index: 5, Term: 1, RaftVersion: 1, Size: int64(len(garbage))}, bytes.NewReader(garbage)); err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(archive)
	flipped[len(flipped)/2] ^= 0x01
	tests := []struct {
		name    string
		archive []byte
		want    string
	}{
		{"flipped byte", flipped, "damaged or truncated"},
		{"truncated", archive[:len(archive)-20], "damaged or truncated"},
		{"half", archive[:len(archive)/2], "damaged or truncated"},
		{"not an archive", []byte("job \"web\" {}"), "not a gzip stream"},
		{"state that does not decode", badState.Bytes(), "restore snapshot"},
		{"empty", nil, "empty archive"},
	}
	dst := populated(t)
	registerJob(t, dst, gpuJob("only-on-dst", structs.JobTypeService, 1, 1))
	settled(t, dst, map[string]int{"only-on-dst": 1})
	before := clusterState(t, dst)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp SnapshotRestoreResponse
			err := dst.RPC(RPCSnapshotRestore, &SnapshotRestoreRequest{Archive: tt.archive}, &resp)
			if !errors.Is(err, structs.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("restore: got %v, want an invalid request saying %q", err, tt.want)
			}
			if got := clusterState(t, dst); !slices.Equal(got, before) {
				t.Errorf("state changed by a refused restore:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
			}
		})
	}
	// The refused restores left a working leader whose Raft log goes on.
	registerJob(t, dst, gpuJob("still-works", structs.JobTypeService, 1, 1))
	settled(t, dst, map[string]int{"still-works": 1})
	if idx := dst.raft.Stats()["last_log_index"]; idx == "" || idx == "0" {
		t.Errorf("last_log_index %q", idx)
	}
}
