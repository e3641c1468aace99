package allocrunner

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/droverhq/drover/structs"
)

func rdzvAlloc(i int) *structs.Allocation {
	return &structs.Allocation{ID: fmt.Sprintf("a%d", i), JobID: "ddp", TaskGroup: "train", Name: fmt.Sprintf("ddp.train[%d]", i)}
}

func rdzvPeers(n int) []structs.RendezvousPeer {
	var ps []structs.RendezvousPeer
	for i := range n {
		ps = append(ps, structs.RendezvousPeer{AllocID: fmt.Sprintf("a%d", i), Index: i, HostIP: fmt.Sprintf("10.0.0.%d", i+1), Port: 20000 + i, CreateIndex: 5})
	}
	return ps
}

func rdzvEnv(t *testing.T, i, count int, d *structs.DistributedConfig, peers []structs.RendezvousPeer) (*Rendezvous, map[string]string) {
	t.Helper()
	tg := &structs.TaskGroup{Name: "train", Count: count, Distributed: d}
	r, err := NewRendezvous(rdzvAlloc(i), tg, count, peers)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Ready() {
		t.Fatalf("rank %d not ready with %d peers", i, len(peers))
	}
	return r, r.Env("/data/alloc/a")
}

func wantEnv(t *testing.T, env map[string]string, want map[string]string, absent ...string) {
	t.Helper()
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	for _, k := range absent {
		if v, ok := env[k]; ok {
			t.Errorf("%s = %q, want unset", k, v)
		}
	}
}

func TestRendezvousEnv_TorchRanks(t *testing.T) {
	for i := range 4 {
		_, env := rdzvEnv(t, i, 4, &structs.DistributedConfig{Framework: "torch", ProcsPerNode: 1}, rdzvPeers(4))
		r := fmt.Sprint(i)
		wantEnv(t, env, map[string]string{
			"RANK": r, "WORLD_SIZE": "4", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "NODE_RANK": r, "NNODES": "4",
			"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "20000",
			EnvGangRank: r, EnvGangWorldSize: "4", EnvGangMasterAddr: "10.0.0.1", EnvGangMasterPort: "20000",
		}, EnvJAXCoordinator, EnvHostfile)
	}
}

func TestRendezvousEnv_TorchProcsPerNode(t *testing.T) {
	_, env := rdzvEnv(t, 1, 2, &structs.DistributedConfig{Framework: "torch", ProcsPerNode: 8}, rdzvPeers(2))
	wantEnv(t, env, map[string]string{"NODE_RANK": "1", "NNODES": "2", "LOCAL_WORLD_SIZE": "8", "WORLD_SIZE": "16", "MASTER_ADDR": "10.0.0.1"},
		"RANK", "LOCAL_RANK")
}

func TestRendezvousEnv_JAX(t *testing.T) {
	_, env := rdzvEnv(t, 2, 3, &structs.DistributedConfig{Framework: "jax", ProcsPerNode: 1}, rdzvPeers(3))
	wantEnv(t, env, map[string]string{EnvJAXCoordinator: "10.0.0.1:20000", EnvJAXNumProcesses: "3", EnvJAXProcessID: "2", EnvGangRank: "2"},
		"MASTER_ADDR", "RANK")
}

func TestRendezvousEnv_MPIHostfileWaitsForAll(t *testing.T) {
	tg := &structs.TaskGroup{Name: "train", Count: 3, Distributed: &structs.DistributedConfig{Framework: "mpi", ProcsPerNode: 4}}
	r, err := NewRendezvous(rdzvAlloc(1), tg, 3, rdzvPeers(2))
	if err != nil || r.Ready() {
		t.Fatalf("mpi with 2 of 3 ranks placed: ready %v, %v; want not ready", r != nil && r.Ready(), err)
	}
	r, env := rdzvEnv(t, 1, 3, tg.Distributed, rdzvPeers(3))
	wantEnv(t, env, map[string]string{EnvHostfile: filepath.Join("/data/alloc/a", "alloc", "hostfile")})
	if got, want := r.Hostfile(), "10.0.0.1 slots=4\n10.0.0.2 slots=4\n10.0.0.3 slots=4\n"; got != want {
		t.Errorf("hostfile %q, want %q", got, want)
	}
}

func TestRendezvousEnv_NoneAndGang(t *testing.T) {
	for _, d := range []*structs.DistributedConfig{nil, {Framework: "none", ProcsPerNode: 1}} {
		_, env := rdzvEnv(t, 0, 2, d, rdzvPeers(2))
		if len(env) != 4 {
			t.Errorf("framework none: %v, want only the 4 DROVER_GANG_ variables", env)
		}
	}
}

// TestRendezvous_ReplacementKeepsRank: a replacement of rank 0 (same
// name index, newer) is the master once placed; the finished one it
// replaces is not, and a worker's replacement keeps its rank.
func TestRendezvous_ReplacementKeepsRank(t *testing.T) {
	peers := rdzvPeers(2)
	peers[0].ClientStatus = structs.AllocClientStatusFailed
	repl := structs.RendezvousPeer{AllocID: "a0-new", Index: 0, HostIP: "10.0.0.9", Port: 21000, CreateIndex: 9, ClientStatus: structs.AllocClientStatusPending}
	_, env := rdzvEnv(t, 1, 2, nil, append(peers, repl))
	wantEnv(t, env, map[string]string{EnvGangRank: "1", EnvGangMasterAddr: "10.0.0.9", EnvGangMasterPort: "21000"})
	worker := rdzvAlloc(1)
	worker.ID = "a1-new"
	r, err := NewRendezvous(worker, &structs.TaskGroup{Name: "train", Count: 2}, 2, peers)
	if err != nil || r.Rank != 1 {
		t.Errorf("replacement of rank 1: rank %v, %v; want 1", r, err)
	}
	// Rank 0 not placed yet (no port): not ready.
	peers[0].Port = 0
	r, _ = NewRendezvous(rdzvAlloc(1), &structs.TaskGroup{Name: "train", Count: 2}, 2, peers)
	if r.Ready() {
		t.Error("ready without rank 0's port")
	}
	// An index beyond the count (scaled down) is refused.
	if _, err := NewRendezvous(rdzvAlloc(3), &structs.TaskGroup{Name: "train", Count: 2}, 2, peers); err == nil {
		t.Error("rank 3 of a group of 2: want refused")
	}
}
