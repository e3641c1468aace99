package state

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// TableReservations holds the reservations of waiting gangs
// (structs.Reservation), one per job, written with plan results.
const TableReservations = "reservations"

func reservationsTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableReservations, Indexes: map[string]*memdb.IndexSchema{
		indexID: namespacedIndex(indexID, "JobID", true),
	}}
}

// Reservations returns every stored reservation, expired ones included
// (readers check Live).
func (s *StateStore) Reservations() ([]*structs.Reservation, error) {
	iter, err := s.db.Txn(false).Get(TableReservations, indexID)
	if err != nil {
		return nil, fmt.Errorf("read reservations: %w", err)
	}
	var out []*structs.Reservation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.Reservation))
	}
	return out, nil
}

// ReservationByJob returns the job's reservation, or nil.
func (s *StateStore) ReservationByJob(namespace, jobID string) (*structs.Reservation, error) {
	return first[*structs.Reservation](nil, s.db.Txn(false), TableReservations, indexID, namespaceOf(namespace), jobID)
}

// UpsertReservation stores r (a copy), keeping the CreateIndex of the
// job's reservation it replaces.
func (tx *Txn) UpsertReservation(r *structs.Reservation) error {
	if r == nil || r.JobID == "" {
		return fmt.Errorf("upsert reservation: missing job: %w", structs.ErrInvalid)
	}
	c := r.Copy()
	c.Namespace = namespaceOf(c.Namespace)
	existing, err := first[*structs.Reservation](nil, tx.txn, TableReservations, indexID, c.Namespace, c.JobID)
	if err != nil {
		return err
	}
	c.CreateIndex, c.ModifyIndex = tx.index, tx.index
	if existing != nil {
		c.CreateIndex = existing.CreateIndex
	}
	if err := tx.txn.Insert(TableReservations, c); err != nil {
		return fmt.Errorf("upsert reservation of job %q: %w", c.JobID, err)
	}
	return setIndex(tx.txn, TableReservations, tx.index)
}

// DeleteReservation drops the job's reservation, if any.
func (tx *Txn) DeleteReservation(namespace, jobID string) error {
	existing, err := first[*structs.Reservation](nil, tx.txn, TableReservations, indexID, namespaceOf(namespace), jobID)
	if err != nil || existing == nil {
		return err
	}
	if err := tx.txn.Delete(TableReservations, existing); err != nil {
		return fmt.Errorf("delete reservation of job %q: %w", jobID, err)
	}
	return setIndex(tx.txn, TableReservations, tx.index)
}

// ReservationRestore inserts a reservation from a snapshot.
func (r *StateRestore) ReservationRestore(res *structs.Reservation) error {
	if err := r.txn.Insert(TableReservations, res); err != nil {
		return fmt.Errorf("restore reservation of job %q: %w", res.JobID, err)
	}
	return nil
}
