package allocrunner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/drivers/rawexec"
	"github.com/droverhq/drover/structs"
)

// stagedPeers answers the n-th query with stages[n] (the last one
// repeated), recording each query's min index.
type stagedPeers struct {
	mu     sync.Mutex
	stages [][]structs.RendezvousPeer
	asked  []uint64
}

func (s *stagedPeers) Peers(ctx context.Context, _ string, minIndex uint64, _ time.Duration) (*structs.RendezvousResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, minIndex)
	n := min(len(s.asked), len(s.stages)) - 1
	return &structs.RendezvousResponse{Peers: s.stages[n], Count: 2, QueryMeta: structs.QueryMeta{Index: uint64(10 + n)}}, nil
}

// TestAwaitRendezvous_WaitsForRankZero: a worker started before rank 0
// is placed asks again (blocking past the last answer's index) until
// rank 0 has its port.
func TestAwaitRendezvous_WaitsForRankZero(t *testing.T) {
	all := rdzvPeers(2)
	src := &stagedPeers{stages: [][]structs.RendezvousPeer{all[1:], all[1:], all}}
	tg := &structs.TaskGroup{Name: "train", Count: 2, Distributed: &structs.DistributedConfig{Framework: "torch", ProcsPerNode: 1}}
	r, err := awaitRendezvous(context.Background(), src, rdzvAlloc(1), tg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Addrs[0].Port != 20000 || r.Rank != 1 {
		t.Errorf("rendezvous %+v, want rank 1 with rank 0 at port 20000", r)
	}
	if want := []uint64{0, 10, 11}; len(src.asked) != 3 || src.asked[1] != want[1] || src.asked[2] != want[2] {
		t.Errorf("min indexes asked %v, want %v", src.asked, want)
	}
}

// TestAwaitRendezvous_Bounded: rank 0 never placed ends with the
// context, naming what it waited for.
func TestAwaitRendezvous_Bounded(t *testing.T) {
	src := &stagedPeers{stages: [][]structs.RendezvousPeer{rdzvPeers(2)[1:]}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := awaitRendezvous(ctx, src, rdzvAlloc(1), &structs.TaskGroup{Name: "train", Count: 2, Gang: &structs.Gang{Min: 2}})
	if err == nil || !strings.Contains(err.Error(), "rank 0 of group \"train\" not placed") {
		t.Errorf("err %v, want rank 0 not placed", err)
	}
}

// A task can write the shared dir: a symlink it plants at the hostfile's
// path must be replaced, not written through by the (root) client.
func TestWriteHostfile_DoesNotFollowSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, HostfileName)
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if err := writeHostfile(path, "10.0.0.1 slots=1\n"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("symlink target overwritten: %q", b)
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("hostfile is still a symlink: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "10.0.0.1 slots=1\n" {
		t.Fatalf("hostfile %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temp files left: %v", ents)
	}
}

// TestRendezvous_OldGangWithoutPortRuns: a gang registered before gangs
// got their rendezvous port has allocations without one, so rank 0
// never shows an address; its tasks run as before, without the
// variables, instead of waiting RendezvousTimeout and failing.
func TestRendezvous_OldGangWithoutPortRuns(t *testing.T) {
	a := testAlloc(structs.JobTypeBatch, nil, shTask("t", `echo "rank=${DROVER_GANG_RANK:-none}"`))
	a.Job.TaskGroups[0].Gang = &structs.Gang{Min: 1} // set after canonicalize: no port
	src := &stagedPeers{stages: [][]structs.RendezvousPeer{nil}}
	ar, err := New(&Config{
		Alloc:     a,
		DataDir:   drivertest.ReachableTempDir(t),
		Drivers:   map[string]drivers.Driver{"raw_exec": rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true})},
		OnUpdate:  func(*structs.Allocation) {},
		TaskFiles: TaskFilesConfig{Rendezvous: src},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := runToEnd(t, ar); got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("allocation %q, want complete: %+v", got.ClientStatus, got.TaskStates)
	}
	if out := readLog(t, ar, "t", false); out != "rank=none\n" {
		t.Errorf("stdout %q, want no rendezvous variables", out)
	}
}
