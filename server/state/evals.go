package state

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// UpsertEvals inserts or updates evaluations at index, keeping the
// CreateIndex of those already present, and refreshes their jobs'
// statuses.
func (s *StateStore) UpsertEvals(index uint64, evals []*structs.Evaluation) error {
	return s.Write(index, func(tx *Txn) error { return tx.UpsertEvals(evals) })
}

func upsertEvalTxn(txn *memdb.Txn, index uint64, eval *structs.Evaluation) error {
	if eval == nil || eval.ID == "" {
		return fmt.Errorf("upsert eval: missing ID: %w", structs.ErrInvalid)
	}
	existing, err := first[*structs.Evaluation](nil, txn, TableEvals, indexID, eval.ID)
	if err != nil {
		return err
	}
	e := eval.Copy()
	e.Namespace = namespaceOf(e.Namespace)
	e.CreateIndex = index
	if existing != nil {
		e.CreateIndex = existing.CreateIndex
	}
	e.ModifyIndex = index
	if err := txn.Insert(TableEvals, e); err != nil {
		return fmt.Errorf("upsert eval %q: %w", e.ID, err)
	}
	return queueEvalChanged(txn, existing, e) // queue_usage.go
}

// EvalByID returns the evaluation with id, or nil.
func (s *StateStore) EvalByID(ws memdb.WatchSet, id string) (*structs.Evaluation, error) {
	return first[*structs.Evaluation](ws, s.db.Txn(false), TableEvals, indexID, id)
}

// Evals returns the evaluations of namespace ("" or "*" for all), sorted
// by ID.
func (s *StateStore) Evals(ws memdb.WatchSet, namespace string) ([]*structs.Evaluation, error) {
	return s.EvalsByIDPrefix(ws, namespace, "")
}

// EvalsByIDPrefix returns the evaluations of namespace ("" or "*" for
// all) whose ID starts with prefix, sorted by ID.
func (s *StateStore) EvalsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) ([]*structs.Evaluation, error) {
	iter, err := s.db.Txn(false).Get(TableEvals, indexID+"_prefix", prefix)
	if err != nil {
		return nil, fmt.Errorf("list evals: %w", err)
	}
	keep := func(e *structs.Evaluation) bool { return inNamespace(namespace, e.Namespace) }
	return collect(ws, iter, keep, compareEvals), nil
}

// EvalsByJob returns the job's evaluations, sorted by ID.
func (s *StateStore) EvalsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Evaluation, error) {
	iter, err := s.db.Txn(false).Get(TableEvals, indexJob, namespaceOf(namespace), jobID)
	if err != nil {
		return nil, fmt.Errorf("evals of job %q: %w", jobID, err)
	}
	return collect(ws, iter, nil, compareEvals), nil
}

func compareEvals(a, b *structs.Evaluation) int {
	return byIDThenNamespace(a.ID, a.Namespace, b.ID, b.Namespace)
}
