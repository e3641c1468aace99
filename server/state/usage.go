package state

import (
	"fmt"
	"math"

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
	// Priorities counts the live allocations (GPU or not) per job
	// priority, so a scheduler knows whether anything is low enough to
	// preempt before it looks.
	Priorities map[int]int
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

// countWorkload adds (sign 1) or removes (sign -1) the allocation from
// the transaction's copy of the workload row: its GPU ask to the tally,
// its job's priority to the counts (written once, by flushDerived).
func (tx *Txn) countWorkload(a *structs.Allocation, sign int) error {
	if tx.tally == nil {
		row, err := first[*workloadRow](nil, tx.txn, TableWorkload, indexID, workloadRowID)
		if err != nil {
			return err
		}
		tx.tally, tx.priorities = &frag.Tally{}, map[int]int{}
		if row != nil {
			tx.tally = row.Tally.Copy()
			for p, n := range row.Priorities {
				tx.priorities[p] = n
			}
		}
	}
	if a.Job != nil {
		tx.priorities[a.Job.Priority] += sign
		if tx.priorities[a.Job.Priority] <= 0 {
			delete(tx.priorities, a.Job.Priority)
		}
	}
	gpus, compute := a.GPUShape()
	if gpus == 0 {
		return nil
	}
	cpu, mem := a.Comparable()
	if sign > 0 {
		tx.tally.Add(gpus, compute, cpu, mem)
	} else {
		tx.tally.Remove(gpus, compute, cpu, mem)
	}
	return nil
}

// LivePriorities counts the live allocations per job priority.
func (s *StateStore) LivePriorities() (map[int]int, error) {
	row, err := first[*workloadRow](nil, s.db.Txn(false), TableWorkload, indexID, workloadRowID)
	if err != nil || row == nil {
		return nil, err
	}
	return row.Priorities, nil
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
func (tx *Txn) updateUsage(old, cur *structs.Allocation) error {
	if err := tx.chargeQuota(old, cur); err != nil { // quota.go
		return err
	}
	tx.chargeQueue(old, cur)                               // queue_usage.go
	if err := tx.dropEndedServices(old, cur); err != nil { // services.go
		return err
	}
	before, after := countsForUsage(old), countsForUsage(cur)
	if before {
		if err := tx.addUsage(old, -1); err != nil {
			return err
		}
	}
	if after {
		return tx.addUsage(cur, 1)
	}
	return nil
}

// addUsage adds (sign 1) or removes (sign -1) what a holds to or from the
// transaction's copy of its node's usage row.
func (tx *Txn) addUsage(a *structs.Allocation, sign int) error {
	u, ok := tx.usage[a.NodeID]
	if !ok {
		stored, err := usageOf(tx.txn, a.NodeID)
		if err != nil {
			return err
		}
		if stored == nil {
			node, err := first[*structs.Node](nil, tx.txn, TableNodes, indexID, a.NodeID)
			if err != nil {
				return err
			}
			u = &structs.NodeUsage{NodeID: a.NodeID, Node: node}
		} else {
			u = stored.Copy()
		}
		if tx.usage == nil {
			tx.usage = map[string]*structs.NodeUsage{}
		}
		tx.usage[a.NodeID] = u
	}
	u.Add(a, sign)
	return tx.countWorkload(a, sign)
}

// flushDerived writes the usage rows and the workload tally the
// transaction changed, each once however many allocations changed it: a
// plan of thousands of allocations on hundreds of nodes inserts hundreds
// of rows, not thousands. It runs before the commit and before any node
// write (which refreshes the node's usage row from the table).
func (tx *Txn) flushDerived() error {
	if err := tx.flushQuota(); err != nil { // quota.go
		return err
	}
	if err := tx.flushQueues(); err != nil { // queue_usage.go
		return err
	}
	for nodeID, u := range tx.usage {
		u.Refresh(u.Node)
		if err := tx.txn.Insert(TableUsage, u); err != nil {
			return fmt.Errorf("update usage of node %q: %w", nodeID, err)
		}
	}
	clear(tx.usage)
	if tx.tally != nil {
		if err := tx.txn.Insert(TableWorkload, &workloadRow{ID: workloadRowID, Tally: tx.tally, Priorities: tx.priorities}); err != nil {
			return fmt.Errorf("update gpu workload: %w", err)
		}
		tx.tally, tx.priorities = nil, nil
	}
	return nil
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
	tally, priorities := &frag.Tally{}, map[int]int{}
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
		if a.Job != nil {
			priorities[a.Job.Priority]++
		}
		gpus, compute := a.GPUShape()
		if gpus == 0 {
			continue
		}
		cpu, mem := a.Comparable()
		tally.Add(gpus, compute, cpu, mem)
	}
	if err := txn.Insert(TableWorkload, &workloadRow{ID: workloadRowID, Tally: tally, Priorities: priorities}); err != nil {
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

// UsageByFreeGPUs returns the nodes with at least min wholly free
// healthy GPUs, those with fewest first (UsageFrom on IndexFreeGPUs).
func (s *StateStore) UsageByFreeGPUs(min int) (next func() *structs.NodeUsage, err error) {
	return s.UsageFrom(IndexFreeGPUs, min)
}

// UsageByFreeCompute returns the nodes with a healthy GPU that has at
// least min percent of its compute free, the tightest first (UsageFrom on
// IndexMaxFreeCompute).
func (s *StateStore) UsageByFreeCompute(min int) (next func() *structs.NodeUsage, err error) {
	return s.UsageFrom(IndexMaxFreeCompute, min)
}

// UsageByFreeGPUsDesc returns the nodes with at least min wholly free
// healthy GPUs, those with most first.
func (s *StateStore) UsageByFreeGPUsDesc(min int) (next func() *structs.NodeUsage, err error) {
	return s.usageDesc(IndexFreeGPUs, min, func(u *structs.NodeUsage) int { return u.FreeGPUs })
}

// UsageByFreeComputeDesc returns the nodes with a healthy GPU that has at
// least min percent of its compute free, those with most first.
func (s *StateStore) UsageByFreeComputeDesc(min int) (next func() *structs.NodeUsage, err error) {
	return s.usageDesc(IndexMaxFreeCompute, min, func(u *structs.NodeUsage) int { return u.MaxFreeCompute })
}

// usageDesc returns the usage rows in descending order of index, down to
// those whose value (key) is min.
func (s *StateStore) usageDesc(index string, min int, key func(*structs.NodeUsage) int) (func() *structs.NodeUsage, error) {
	iter, err := s.db.Txn(false).ReverseLowerBound(TableUsage, index, math.MaxInt32)
	if err != nil {
		return nil, fmt.Errorf("walk usage by %s: %w", index, err)
	}
	done := false
	return func() *structs.NodeUsage {
		for raw := iter.Next(); raw != nil && !done; raw = iter.Next() {
			u := raw.(*structs.NodeUsage)
			if key(u) < min {
				done = true
				break
			}
			if u.Node != nil {
				return u
			}
		}
		return nil
	}, nil
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

// UsageFrom returns the nodes' usage in ascending order of index
// (IndexFreeGPUs or IndexMaxFreeCompute), from the first with at least
// min: each call of next returns the next row, nil at the end. The rows
// are those of the store as it was when UsageFrom was called, however
// long the caller takes. Rows of deregistered nodes (Node nil) are
// skipped.
func (s *StateStore) UsageFrom(index string, min int) (next func() *structs.NodeUsage, err error) {
	iter, err := s.db.Txn(false).LowerBound(TableUsage, index, min)
	if err != nil {
		return nil, fmt.Errorf("walk usage by %s: %w", index, err)
	}
	return func() *structs.NodeUsage {
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if u := raw.(*structs.NodeUsage); u.Node != nil {
				return u
			}
		}
		return nil
	}, nil
}
