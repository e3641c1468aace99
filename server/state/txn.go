package state

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/server/scheduler/frag"
	"github.com/droverhq/drover/structs"
)

// Txn is one write transaction at one Raft index. The FSM applies all of
// a log entry's writes through one Txn (a job and its evaluation, a node
// status and the evaluations it causes), so readers see all of them or
// none. Its reads see its own writes. A Txn is only valid inside the
// function given to StateStore.Write.
type Txn struct {
	txn   *memdb.Txn
	index uint64
	// touched are the jobs whose evaluations or allocations changed: their
	// status is refreshed before the commit.
	touched map[jobKey]struct{}
	// usage and tally are the derived rows (usage.go) this transaction
	// changed, private copies written by flushDerived.
	usage      map[string]*structs.NodeUsage
	tally      *frag.Tally
	priorities map[int]int
	// quota is the change of each namespace's quota usage (quota.go),
	// written by flushQuota.
	quota map[string]structs.QuotaResources
	// queueGPUs is the change of each queue's GPUs held, in percent of
	// one GPU (queue_usage.go), written by flushQueues.
	queueGPUs map[string]int64
}

// Write runs fn in one write transaction at index and commits it only if
// fn succeeds; on error (or panic) nothing fn wrote is visible. The status
// of every job whose evaluations or allocations fn changed is refreshed
// before the commit.
func (s *StateStore) Write(index uint64, fn func(tx *Txn) error) error {
	return s.write(func(txn *memdb.Txn) error {
		tx := &Txn{txn: txn, index: index, touched: map[jobKey]struct{}{}}
		if err := fn(tx); err != nil {
			return err
		}
		if err := tx.flushDerived(); err != nil {
			return err
		}
		return refreshJobStatuses(txn, index, tx.touched)
	})
}

func (tx *Txn) touch(namespace, jobID string) {
	tx.touched[jobKey{namespaceOf(namespace), jobID}] = struct{}{}
}

// NodeByID returns the node with id as the transaction sees it, or nil.
func (tx *Txn) NodeByID(id string) (*structs.Node, error) {
	return first[*structs.Node](nil, tx.txn, TableNodes, indexID, id)
}

// JobByID returns the job as the transaction sees it, or nil.
func (tx *Txn) JobByID(namespace, id string) (*structs.Job, error) {
	return first[*structs.Job](nil, tx.txn, TableJobs, indexID, namespaceOf(namespace), id)
}

// AllocByID returns the allocation with id as the transaction sees it, or
// nil.
func (tx *Txn) AllocByID(id string) (*structs.Allocation, error) {
	return first[*structs.Allocation](nil, tx.txn, TableAllocs, indexID, id)
}

// EvalByID returns the evaluation with id as the transaction sees it, or
// nil.
func (tx *Txn) EvalByID(id string) (*structs.Evaluation, error) {
	return first[*structs.Evaluation](nil, tx.txn, TableEvals, indexID, id)
}

// UpsertNode is StateStore.UpsertNode inside the transaction.
func (tx *Txn) UpsertNode(node *structs.Node) error {
	if err := tx.flushDerived(); err != nil {
		return err
	}
	return upsertNodeTxn(tx.txn, tx.index, node)
}

// UpdateNodeStatus is StateStore.UpdateNodeStatus inside the transaction.
func (tx *Txn) UpdateNodeStatus(nodeID, status string, updatedAt int64) error {
	if err := tx.flushDerived(); err != nil {
		return err
	}
	existing, err := tx.NodeByID(nodeID)
	if err != nil {
		return err
	}
	if existing == nil {
		return fmt.Errorf("update status of node %q: %w", nodeID, structs.ErrUnknownNode)
	}
	n := existing.Copy()
	n.Status = status
	n.StatusUpdatedAt = updatedAt
	n.ModifyIndex = tx.index
	if err := tx.txn.Insert(TableNodes, n); err != nil {
		return fmt.Errorf("update status of node %q: %w", nodeID, err)
	}
	if err := refreshUsageNode(tx.txn, nodeID, n); err != nil {
		return err
	}
	if err := countClusterGPUs(tx.txn, existing, n); err != nil { // queue_usage.go
		return err
	}
	if err := tx.dropNodeServices(nodeID, status); err != nil { // services.go
		return err
	}
	return setIndex(tx.txn, TableNodes, tx.index)
}

// DeleteNode is StateStore.DeleteNode inside the transaction.
func (tx *Txn) DeleteNode(nodeID string) error {
	if err := tx.flushDerived(); err != nil {
		return err
	}
	existing, err := tx.NodeByID(nodeID)
	if err != nil {
		return err
	}
	if existing == nil {
		return fmt.Errorf("delete node %q: %w", nodeID, structs.ErrUnknownNode)
	}
	if err := tx.txn.Delete(TableNodes, existing); err != nil {
		return fmt.Errorf("delete node %q: %w", nodeID, err)
	}
	if err := refreshUsageNode(tx.txn, nodeID, nil); err != nil {
		return err
	}
	if err := countClusterGPUs(tx.txn, existing, nil); err != nil { // queue_usage.go
		return err
	}
	return setIndex(tx.txn, TableNodes, tx.index)
}

// UpsertJob is StateStore.UpsertJob inside the transaction.
func (tx *Txn) UpsertJob(job *structs.Job) error {
	return upsertJobTxn(tx.txn, tx.index, job)
}

// DeleteJob is StateStore.DeleteJob inside the transaction.
func (tx *Txn) DeleteJob(namespace, jobID string) error {
	existing, err := tx.JobByID(namespace, jobID)
	if err != nil || existing == nil {
		return err
	}
	if err := tx.txn.Delete(TableJobs, existing); err != nil {
		return fmt.Errorf("delete job %q: %w", jobID, err)
	}
	if err := tx.DeleteReservation(namespace, jobID); err != nil {
		return err
	}
	if err := tx.deletePeriodicLaunch(namespace, jobID); err != nil { // periodic.go
		return err
	}
	if err := deleteJobVersions(tx.txn, tx.index, namespace, jobID); err != nil { // job_versions.go
		return err
	}
	if err := tx.deleteJobDeployments(namespace, jobID); err != nil { // deployments.go
		return err
	}
	if err := queueJobChanged(tx.txn, existing, nil); err != nil { // queue_usage.go
		return err
	}
	return setIndex(tx.txn, TableJobs, tx.index)
}

// UpsertEvals is StateStore.UpsertEvals inside the transaction.
func (tx *Txn) UpsertEvals(evals []*structs.Evaluation) error {
	for _, eval := range evals {
		if err := upsertEvalTxn(tx.txn, tx.index, eval); err != nil {
			return err
		}
		tx.touch(eval.Namespace, eval.JobID)
	}
	if len(evals) == 0 {
		return nil
	}
	return setIndex(tx.txn, TableEvals, tx.index)
}

// UpsertAllocs is StateStore.UpsertAllocs inside the transaction.
func (tx *Txn) UpsertAllocs(allocs []*structs.Allocation) error {
	for _, alloc := range allocs {
		if err := tx.upsertAlloc(alloc); err != nil {
			return err
		}
		tx.touch(alloc.Namespace, alloc.JobID)
	}
	if len(allocs) == 0 {
		return nil
	}
	return setIndex(tx.txn, TableAllocs, tx.index)
}

// UpdateAllocsFromClient is StateStore.UpdateAllocsFromClient inside the
// transaction.
func (tx *Txn) UpdateAllocsFromClient(allocs []*structs.Allocation) error {
	changed := false
	for _, update := range allocs {
		if update == nil {
			continue
		}
		existing, err := tx.AllocByID(update.ID)
		if err != nil {
			return err
		}
		if existing == nil {
			continue
		}
		a := mergeClientUpdate(existing, update)
		a.ModifyIndex = tx.index
		if err := tx.txn.Insert(TableAllocs, a); err != nil {
			return fmt.Errorf("update alloc %q: %w", a.ID, err)
		}
		if err := tx.countDeploymentHealth(existing, a); err != nil { // deployments.go
			return err
		}
		if err := tx.updateUsage(existing, a); err != nil {
			return err
		}
		tx.touch(a.Namespace, a.JobID)
		changed = true
	}
	if !changed {
		return nil
	}
	return setIndex(tx.txn, TableAllocs, tx.index)
}
