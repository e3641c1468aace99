package state

import (
	"fmt"
	"slices"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// UpsertAllocs writes plan results (placements and stops) at index. An
// existing allocation keeps its CreateIndex and the fields its client owns
// (ClientStatus, ClientDescription, TaskStates), unless the incoming one
// marks it lost. An allocation without a Job gets the one it had, or else
// the job in state. The jobs' statuses are refreshed.
func (s *StateStore) UpsertAllocs(index uint64, allocs []*structs.Allocation) error {
	return s.Write(index, func(tx *Txn) error { return tx.UpsertAllocs(allocs) })
}

// UpsertPlanAllocs writes the allocations of a plan result (see
// structs.ApplyPlanResultsRequest): req.Allocs as UpsertAllocs does, as
// entries written before req.Job existed need; then the stops, which keep
// the Job in state (a stop of an allocation no longer in state is
// dropped: there is nothing left to stop); then the placements and
// in-place updates, those of req.Job's job without a Job taking it (others
// fall back as in UpsertAllocs). A placement left
// with no job at all is refused: the scheduler and the clients read it.
func (tx *Txn) UpsertPlanAllocs(req *structs.ApplyPlanResultsRequest) error {
	if err := tx.UpsertAllocs(req.Allocs); err != nil {
		return err
	}
	var stops []*structs.Allocation
	for _, a := range req.AllocsStopped {
		if a == nil || a.ID == "" {
			return fmt.Errorf("stop alloc: missing ID: %w", structs.ErrInvalid)
		}
		existing, err := tx.AllocByID(a.ID)
		if err != nil {
			return err
		}
		if existing != nil {
			stops = append(stops, a)
		}
	}
	if err := tx.UpsertAllocs(stops); err != nil {
		return err
	}
	placed := make([]*structs.Allocation, 0, len(req.AllocsPlaced))
	for _, a := range req.AllocsPlaced {
		if a != nil && a.Job == nil && req.Job != nil && a.JobID == req.Job.ID && namespaceOf(a.Namespace) == namespaceOf(req.Job.Namespace) {
			c := *a // upsertAlloc copies it deeply
			c.Job = req.Job
			a = &c
		}
		placed = append(placed, a)
	}
	var fresh []*structs.Allocation
	for _, a := range placed {
		if a == nil || a.DeploymentID == "" {
			continue
		}
		if existing, err := tx.AllocByID(a.ID); err != nil {
			return err
		} else if existing == nil {
			fresh = append(fresh, a)
		}
	}
	if err := tx.UpsertAllocs(placed); err != nil {
		return err
	}
	if err := tx.countDeploymentPlacements(fresh); err != nil { // deployments.go
		return err
	}
	for _, a := range placed {
		stored, err := tx.AllocByID(a.ID)
		if err != nil {
			return err
		}
		if stored == nil || stored.Job == nil {
			return fmt.Errorf("place alloc %q: no job %q in the plan or in state: %w", a.ID, a.JobID, structs.ErrInvalid)
		}
	}
	return nil
}

// upsertAlloc writes one allocation of a plan result (see UpsertAllocs).
func (tx *Txn) upsertAlloc(alloc *structs.Allocation) error {
	txn, index := tx.txn, tx.index
	if alloc == nil || alloc.ID == "" {
		return fmt.Errorf("upsert alloc: missing ID: %w", structs.ErrInvalid)
	}
	existing, err := first[*structs.Allocation](nil, txn, TableAllocs, indexID, alloc.ID)
	if err != nil {
		return err
	}
	a := alloc.Copy()
	a.Namespace = namespaceOf(a.Namespace)
	a.CreateIndex = index
	if existing != nil {
		a.CreateIndex = existing.CreateIndex
		if a.ClientStatus != structs.AllocClientStatusLost {
			a.ClientStatus = existing.ClientStatus
			a.ClientDescription = existing.ClientDescription
			a.TaskStates = existing.TaskStates // immutable, safe to share
		}
		// The deployment health is the client's too (deployments.go).
		a.DeploymentID, a.DeploymentStatus = existing.DeploymentID, existing.DeploymentStatus.Copy()
		if a.Job == nil {
			a.Job = existing.Job
		}
	}
	if a.ClientStatus == "" {
		a.ClientStatus = structs.AllocClientStatusPending
	}
	if a.Job == nil {
		if a.Job, err = first[*structs.Job](nil, txn, TableJobs, indexID, a.Namespace, a.JobID); err != nil {
			return err
		}
	}
	a.ModifyIndex = index
	a.AllocModifyIndex = index
	if err := txn.Insert(TableAllocs, a); err != nil {
		return fmt.Errorf("upsert alloc %q: %w", a.ID, err)
	}
	return tx.updateUsage(existing, a)
}

// UpdateAllocsFromClient merges what a client reports (ClientStatus,
// ClientDescription, TaskStates, ModifyTime) into the allocations at
// index. Allocations not in state are ignored.
func (s *StateStore) UpdateAllocsFromClient(index uint64, allocs []*structs.Allocation) error {
	return s.Write(index, func(tx *Txn) error { return tx.UpdateAllocsFromClient(allocs) })
}

// DescNodeDown is the client description of an allocation marked lost
// because its node went down (the scheduler's words for the same).
const DescNodeDown = "alloc is lost since its node is down"

// LoseStoppedAllocs marks lost, at the node's going down, the node's
// allocations the servers stopped but its client never reported
// finished: no client will report them now, and the scheduler, which
// marks lost only the ones meant to run, leaves them be; they would show
// pending or running for good. The node's client, if it comes back,
// may still report how they ended.
func (tx *Txn) LoseStoppedAllocs(nodeID string, at int64) error {
	allocs, err := allocsOn(tx.txn, nodeID)
	if err != nil {
		return err
	}
	var lost []*structs.Allocation
	for _, a := range allocs {
		if a.DesiredStatus != structs.AllocDesiredStatusRun && !a.ClientTerminalStatus() {
			lost = append(lost, &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusLost,
				ClientDescription: DescNodeDown, ModifyTime: at})
		}
	}
	return tx.UpdateAllocsFromClient(lost)
}

// allocsOn returns the node's allocations as txn sees them.
func allocsOn(txn *memdb.Txn, nodeID string) ([]*structs.Allocation, error) {
	iter, err := txn.Get(TableAllocs, indexNode, nodeID)
	if err != nil {
		return nil, fmt.Errorf("allocs of node %q: %w", nodeID, err)
	}
	return collect(nil, iter, nil, compareAllocs), nil
}

// terminalClientStatus reports whether a client status is final.
func terminalClientStatus(status string) bool {
	switch status {
	case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
		return true
	}
	return false
}

// mergeClientUpdate returns a copy of existing with what the client
// reported. A field the client left empty keeps its value.
func mergeClientUpdate(existing, update *structs.Allocation) *structs.Allocation {
	a := existing.Copy()
	// A finished allocation stays finished: a late or repeated report of
	// it pending or running (a retried update delivered out of order, a
	// restarted client's view of an allocation the servers marked lost) is
	// ignored, so it cannot hold its resources again.
	if existing.ClientTerminalStatus() && !terminalClientStatus(update.ClientStatus) {
		return a
	}
	if update.ClientStatus != "" {
		a.ClientStatus = update.ClientStatus
		a.ClientDescription = update.ClientDescription
	}
	if update.TaskStates != nil {
		a.TaskStates = make(map[string]*structs.TaskState, len(update.TaskStates))
		for name, ts := range update.TaskStates {
			if ts != nil {
				a.TaskStates[name] = copyTaskState(ts)
			}
		}
	}
	if update.ModifyTime != 0 {
		a.ModifyTime = update.ModifyTime
	}
	mergeDeploymentHealth(a, update) // deployments.go
	return a
}

// copyTaskState copies ts without the nil events a faulty client may
// send, so that later copies and readers never meet a nil event.
func copyTaskState(ts *structs.TaskState) *structs.TaskState {
	clean := *ts
	clean.Events = slices.DeleteFunc(slices.Clone(ts.Events), func(e *structs.TaskEvent) bool { return e == nil })
	return clean.Copy()
}

// AllocByID returns the allocation with id, or nil.
func (s *StateStore) AllocByID(ws memdb.WatchSet, id string) (*structs.Allocation, error) {
	return first[*structs.Allocation](ws, s.db.Txn(false), TableAllocs, indexID, id)
}

// Allocs returns the allocations of namespace ("" or "*" for all), sorted
// by ID.
func (s *StateStore) Allocs(ws memdb.WatchSet, namespace string) ([]*structs.Allocation, error) {
	return s.AllocsByIDPrefix(ws, namespace, "")
}

// AllocsByIDPrefix returns the allocations of namespace ("" or "*" for
// all) whose ID starts with prefix, sorted by ID.
func (s *StateStore) AllocsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) ([]*structs.Allocation, error) {
	iter, err := s.db.Txn(false).Get(TableAllocs, indexID+"_prefix", prefix)
	if err != nil {
		return nil, fmt.Errorf("list allocs: %w", err)
	}
	keep := func(a *structs.Allocation) bool { return inNamespace(namespace, a.Namespace) }
	return collect(ws, iter, keep, compareAllocs), nil
}

// AllocsByJob returns the job's allocations, terminal ones included,
// sorted by ID.
func (s *StateStore) AllocsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Allocation, error) {
	return s.allocsBy(ws, indexJob, namespaceOf(namespace), jobID)
}

// AllocsByNode returns the node's allocations, terminal ones included,
// sorted by ID.
func (s *StateStore) AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error) {
	return s.allocsBy(ws, indexNode, nodeID)
}

// AllocsByEval returns the allocations an evaluation created or updated,
// sorted by ID.
func (s *StateStore) AllocsByEval(ws memdb.WatchSet, evalID string) ([]*structs.Allocation, error) {
	return s.allocsBy(ws, indexEval, evalID)
}

func (s *StateStore) allocsBy(ws memdb.WatchSet, index string, args ...any) ([]*structs.Allocation, error) {
	iter, err := s.db.Txn(false).Get(TableAllocs, index, args...)
	if err != nil {
		return nil, fmt.Errorf("allocs by %s: %w", index, err)
	}
	return collect(ws, iter, nil, compareAllocs), nil
}

func compareAllocs(a, b *structs.Allocation) int {
	return byIDThenNamespace(a.ID, a.Namespace, b.ID, b.Namespace)
}
