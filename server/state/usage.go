package state

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/server/scheduler/frag"
	"github.com/droverhq/drover/structs"
)

// TableUsage holds one structs.NodeUsage per node: the sum of what the
// node's non-terminal allocations hold. It is derived, never written by
// the FSM directly: every allocation and node write keeps it current in
// the same transaction, and a restore rebuilds it. Schedulers read a
// node's use from it in one lookup, and walk its indexes to meet the
// fullest nodes that still have room first.
const TableUsage = "node_usage"

// Indexes of the usage table.
const (
	// IndexFreeGPUs orders nodes by how many healthy GPUs are wholly free.
	IndexFreeGPUs = "free_gpus"
	// IndexMaxFreeCompute orders nodes by the most free compute of any
	// one healthy GPU.
	IndexMaxFreeCompute = "max_free_compute"
)

// TableWorkload holds one row, the tally of the GPU asks of all
// non-terminal allocations: the workload the fragmentation-aware ranking
// expects more of. Derived like TableUsage.
const TableWorkload = "gpu_workload"

// workloadRow is the single row of TableWorkload. Its Tally is immutable
// once inserted.
type workloadRow struct {
	ID    string
	Tally *frag.Tally
}

const workloadRowID = "cluster"

func workloadTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableWorkload, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex("ID"),
	}}
}

// GPUWorkload returns the mix of GPU asks the cluster's live allocations
// hold (empty when none).
func (s *StateStore) GPUWorkload() (frag.Workload, error) {
	row, err := first[*workloadRow](nil, s.db.Txn(false), TableWorkload, indexID, workloadRowID)
	if err != nil || row == nil {
		return nil, err
	}
	return row.Tally.Workload(), nil
}

// countWorkload adds (sign 1) or removes (sign -1) the allocation's GPU
// ask from the workload tally.
func countWorkload(txn *memdb.Txn, a *structs.Allocation, sign int) error {
	gpus, compute := a.GPUShape()
	if gpus == 0 {
		return nil
	}
	row, err := first[*workloadRow](nil, txn, TableWorkload, indexID, workloadRowID)
	if err != nil {
		return err
	}
	t := &frag.Tally{}
	if row != nil {
		t = row.Tally.Copy()
	}
	cpu, mem := a.Comparable()
	if sign > 0 {
		t.Add(gpus, compute, cpu, mem)
	} else {
		t.Remove(gpus, compute, cpu, mem)
	}
	if err := txn.Insert(TableWorkload, &workloadRow{ID: workloadRowID, Tally: t}); err != nil {
		return fmt.Errorf("update gpu workload: %w", err)
	}
	return nil
}

func usageTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableUsage, Indexes: map[string]*memdb.IndexSchema{
		indexID:             idIndex("NodeID"),
		IndexFreeGPUs:       {Name: IndexFreeGPUs, Indexer: &memdb.IntFieldIndex{Field: "FreeGPUs"}},
		IndexMaxFreeCompute: {Name: IndexMaxFreeCompute, Indexer: &memdb.IntFieldIndex{Field: "MaxFreeCompute"}},
	}}
}

// usageOf returns the node's usage row as txn sees it, or nil.
func usageOf(txn *memdb.Txn, nodeID string) (*structs.NodeUsage, error) {
	return first[*structs.NodeUsage](nil, txn, TableUsage, indexID, nodeID)
}

// countsForUsage reports whether alloc holds anything on its node.
func countsForUsage(a *structs.Allocation) bool {
	return a != nil && a.NodeID != "" && !a.TerminalStatus()
}

// updateUsage moves a node's usage from old (nil: a new allocation) to
// cur, both versions of one allocation.
func updateUsage(txn *memdb.Txn, old, cur *structs.Allocation) error {
	before, after := countsForUsage(old), countsForUsage(cur)
	if before {
		if err := addUsage(txn, old, -1); err != nil {
			return err
		}
	}
	if after {
		return addUsage(txn, cur, 1)
	}
	return nil
}

func addUsage(txn *memdb.Txn, a *structs.Allocation, sign int) error {
	u, err := usageOf(txn, a.NodeID)
	if err != nil {
		return err
	}
	if u == nil {
		node, err := first[*structs.Node](nil, txn, TableNodes, indexID, a.NodeID)
		if err != nil {
			return err
		}
		u = &structs.NodeUsage{NodeID: a.NodeID}
		u.Refresh(node)
	} else {
		u = u.Copy()
	}
	u.Add(a, sign)
	u.Refresh(u.Node)
	if err := txn.Insert(TableUsage, u); err != nil {
		return fmt.Errorf("update usage of node %q: %w", a.NodeID, err)
	}
	return countWorkload(txn, a, sign)
}

// refreshUsageNode points the node's usage at its new version (nil: the
// node is gone), creating the row for a new node.
func refreshUsageNode(txn *memdb.Txn, nodeID string, node *structs.Node) error {
	u, err := usageOf(txn, nodeID)
	if err != nil {
		return err
	}
	if u == nil {
		if node == nil {
			return nil
		}
		u = &structs.NodeUsage{NodeID: nodeID}
	} else {
		u = u.Copy()
	}
	u.Refresh(node)
	if err := txn.Insert(TableUsage, u); err != nil {
		return fmt.Errorf("refresh usage of node %q: %w", nodeID, err)
	}
	return nil
}

// rebuildUsage recomputes every node's usage from the nodes and
// allocations in txn (after a restore).
func rebuildUsage(txn *memdb.Txn) error {
	if _, err := txn.DeleteAll(TableUsage, indexID); err != nil {
		return fmt.Errorf("clear usage: %w", err)
	}
	if _, err := txn.DeleteAll(TableWorkload, indexID); err != nil {
		return fmt.Errorf("clear gpu workload: %w", err)
	}
	tally := &frag.Tally{}
	usage := map[string]*structs.NodeUsage{}
	nodes, err := txn.Get(TableNodes, indexID)
	if err != nil {
		return err
	}
	for raw := nodes.Next(); raw != nil; raw = nodes.Next() {
		n := raw.(*structs.Node)
		usage[n.ID] = &structs.NodeUsage{NodeID: n.ID, Node: n}
	}
	allocs, err := txn.Get(TableAllocs, indexID)
	if err != nil {
		return err
	}
	for raw := allocs.Next(); raw != nil; raw = allocs.Next() {
		a := raw.(*structs.Allocation)
		if !countsForUsage(a) {
			continue
		}
		u := usage[a.NodeID]
		if u == nil {
			u = &structs.NodeUsage{NodeID: a.NodeID}
			usage[a.NodeID] = u
		}
		u.Add(a, 1)
		gpus, compute := a.GPUShape()
		cpu, mem := a.Comparable()
		tally.Add(gpus, compute, cpu, mem)
	}
	if err := txn.Insert(TableWorkload, &workloadRow{ID: workloadRowID, Tally: tally}); err != nil {
		return fmt.Errorf("rebuild gpu workload: %w", err)
	}
	for _, u := range usage {
		u.Refresh(u.Node)
		if err := txn.Insert(TableUsage, u); err != nil {
			return fmt.Errorf("rebuild usage of node %q: %w", u.NodeID, err)
		}
	}
	return nil
}

// NodeUsage returns what the node's non-terminal allocations hold, or nil
// for a node with none that the store does not know.
func (s *StateStore) NodeUsage(ws memdb.WatchSet, nodeID string) (*structs.NodeUsage, error) {
	return first[*structs.NodeUsage](ws, s.db.Txn(false), TableUsage, indexID, nodeID)
}

// UsageByFreeGPUs walks the nodes with at least min wholly free healthy
// GPUs, those with fewest first (UsageFrom on IndexFreeGPUs).
func (s *StateStore) UsageByFreeGPUs(min int, fn func(*structs.NodeUsage) bool) error {
	return s.UsageFrom(IndexFreeGPUs, min, fn)
}

// UsageByFreeCompute walks the nodes with a healthy GPU that has at least
// min percent of its compute free, the tightest first (UsageFrom on
// IndexMaxFreeCompute).
func (s *StateStore) UsageByFreeCompute(min int, fn func(*structs.NodeUsage) bool) error {
	return s.UsageFrom(IndexMaxFreeCompute, min, fn)
}

// UsageUnderFreeGPUs walks the nodes with fewer than max wholly free
// healthy GPUs, those with most first.
func (s *StateStore) UsageUnderFreeGPUs(max int, fn func(*structs.NodeUsage) bool) error {
	return s.usageUnder(IndexFreeGPUs, max, fn)
}

// UsageUnderFreeCompute walks the nodes whose healthy GPUs all have less
// than max percent of compute free, those with most first.
func (s *StateStore) UsageUnderFreeCompute(max int, fn func(*structs.NodeUsage) bool) error {
	return s.usageUnder(IndexMaxFreeCompute, max, fn)
}

// usageUnder walks usage rows whose index value is below max, descending.
// Index keys are the value then the node ID, so every row of value max
// sorts after the bare value and is left out.
func (s *StateStore) usageUnder(index string, max int, fn func(*structs.NodeUsage) bool) error {
	iter, err := s.db.Txn(false).ReverseLowerBound(TableUsage, index, max)
	if err != nil {
		return fmt.Errorf("walk usage under %s: %w", index, err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		u := raw.(*structs.NodeUsage)
		if u.Node == nil {
			continue
		}
		if !fn(u) {
			return nil
		}
	}
	return nil
}

// UsageFrom walks the nodes' usage in ascending order of index
// (IndexFreeGPUs or IndexMaxFreeCompute), from the first with at least
// min, calling fn until it returns false. Rows of deregistered nodes
// (Node nil) are skipped.
func (s *StateStore) UsageFrom(index string, min int, fn func(*structs.NodeUsage) bool) error {
	iter, err := s.db.Txn(false).LowerBound(TableUsage, index, min)
	if err != nil {
		return fmt.Errorf("walk usage by %s: %w", index, err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		u := raw.(*structs.NodeUsage)
		if u.Node == nil {
			continue
		}
		if !fn(u) {
			return nil
		}
	}
	return nil
}
