package allocrunner

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/droverhq/drover/structs"
)

// Rendezvous variables. DROVER_GANG_* are set for every allocation of a
// gang or distributed group; the others follow its framework.
const (
	EnvGangRank       = "DROVER_GANG_RANK"
	EnvGangWorldSize  = "DROVER_GANG_WORLD_SIZE"
	EnvGangMasterAddr = "DROVER_GANG_MASTER_ADDR"
	EnvGangMasterPort = "DROVER_GANG_MASTER_PORT"
	EnvHostfile       = "DROVER_HOSTFILE"

	EnvMasterAddr     = "MASTER_ADDR"
	EnvMasterPort     = "MASTER_PORT"
	EnvRank           = "RANK"
	EnvWorldSize      = "WORLD_SIZE"
	EnvLocalRank      = "LOCAL_RANK"
	EnvLocalWorldSize = "LOCAL_WORLD_SIZE"
	EnvNodeRank       = "NODE_RANK"
	EnvNNodes         = "NNODES"

	EnvJAXCoordinator  = "JAX_COORDINATOR_ADDRESS"
	EnvJAXNumProcesses = "JAX_NUM_PROCESSES"
	EnvJAXProcessID    = "JAX_PROCESS_ID"
)

// HostfileName is the MPI hostfile's name in the allocation directory.
const HostfileName = "hostfile"

// Rendezvous is what an allocation learns of its group to rendezvous:
// its rank, the group's count, and the address of each rank placed.
type Rendezvous struct {
	Rank      int
	Count     int
	Framework string
	ProcsPer  int
	// Addrs holds the rendezvous address (IP, port) of each rank, by
	// rank; a rank not placed yet has none.
	Addrs map[int]structs.RendezvousPeer
}

// NewRendezvous ranks alloc among peers: its rank is its name index (a
// replacement keeps the index, so it inherits the rank), and each
// rank's address is that of the allocation holding it, preferring one
// the client has not finished, then the newest.
func NewRendezvous(alloc *structs.Allocation, tg *structs.TaskGroup, count int, peers []structs.RendezvousPeer) (*Rendezvous, error) {
	rank := alloc.Index()
	if rank < 0 || rank >= count {
		return nil, fmt.Errorf("allocation %s has rank %d outside the group's count %d", alloc.Name, rank, count)
	}
	r := &Rendezvous{Rank: rank, Count: count, Framework: structs.FrameworkNone, ProcsPer: 1, Addrs: map[int]structs.RendezvousPeer{}}
	if d := tg.Distributed; d != nil {
		r.Framework, r.ProcsPer = d.Framework, max(d.ProcsPerNode, 1)
	}
	for _, p := range peers {
		if p.Port == 0 || p.Index < 0 || p.Index >= count {
			continue
		}
		if cur, ok := r.Addrs[p.Index]; !ok || better(p, cur) {
			r.Addrs[p.Index] = p
		}
	}
	return r, nil
}

// better reports whether peer p should hold its rank rather than cur.
func better(p, cur structs.RendezvousPeer) bool {
	pDone, curDone := clientDone(p.ClientStatus), clientDone(cur.ClientStatus)
	if pDone != curDone {
		return curDone
	}
	return p.CreateIndex > cur.CreateIndex
}

func clientDone(status string) bool {
	a := structs.Allocation{ClientStatus: status}
	return a.ClientTerminalStatus()
}

// Ready reports whether the rendezvous can be written: rank 0 is
// placed, and for mpi every rank is (the hostfile lists them all).
func (r *Rendezvous) Ready() bool {
	if _, ok := r.Addrs[0]; !ok {
		return false
	}
	return r.Framework != structs.FrameworkMPI || len(r.Addrs) == r.Count
}

// Env returns the rendezvous variables (Ready must hold). For torch
// with procs_per_node > 1, RANK and LOCAL_RANK are left to the launcher
// (torchrun sets them per process).
func (r *Rendezvous) Env(allocDir string) map[string]string {
	master := r.Addrs[0]
	port := strconv.Itoa(master.Port)
	rank := strconv.Itoa(r.Rank)
	count := strconv.Itoa(r.Count)
	env := map[string]string{
		EnvGangRank: rank, EnvGangWorldSize: count,
		EnvGangMasterAddr: master.HostIP, EnvGangMasterPort: port,
	}
	switch r.Framework {
	case structs.FrameworkTorch:
		env[EnvMasterAddr], env[EnvMasterPort] = master.HostIP, port
		env[EnvNodeRank], env[EnvNNodes] = rank, count
		env[EnvLocalWorldSize] = strconv.Itoa(r.ProcsPer)
		env[EnvWorldSize] = strconv.Itoa(r.Count * r.ProcsPer)
		if r.ProcsPer == 1 {
			env[EnvRank], env[EnvLocalRank] = rank, "0"
		}
	case structs.FrameworkJAX:
		env[EnvJAXCoordinator] = net.JoinHostPort(master.HostIP, port)
		env[EnvJAXNumProcesses], env[EnvJAXProcessID] = count, rank
	case structs.FrameworkMPI:
		env[EnvMasterAddr], env[EnvMasterPort] = master.HostIP, port
		env[EnvHostfile] = filepath.Join(SharedDir(allocDir), HostfileName)
	}
	return env
}

// Hostfile is the MPI hostfile: one line per rank, in rank order,
// "<ip> slots=<procs_per_node>".
func (r *Rendezvous) Hostfile() string {
	ranks := make([]int, 0, len(r.Addrs))
	for i := range r.Addrs {
		ranks = append(ranks, i)
	}
	slices.Sort(ranks)
	var b strings.Builder
	for _, i := range ranks {
		fmt.Fprintf(&b, "%s slots=%d\n", r.Addrs[i].HostIP, r.ProcsPer)
	}
	return b.String()
}
