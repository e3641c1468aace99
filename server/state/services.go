package state

import (
	"fmt"
	"slices"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// TableServiceRegistrations holds the service registry (provider =
// "nomad"): one row per service instance of a running allocation,
// written by the FSM for clients and removed when the allocation ends,
// is collected, or its node goes down.
const TableServiceRegistrations = "service_registrations"

const (
	indexServiceName = "service_name"
	indexAlloc       = "alloc"
)

func serviceRegistrationsTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableServiceRegistrations, Indexes: map[string]*memdb.IndexSchema{
		indexID:          idIndex("ID"),
		indexServiceName: namespacedIndex(indexServiceName, "ServiceName", false),
		indexAlloc:       {Name: indexAlloc, Indexer: &memdb.StringFieldIndex{Field: "AllocID"}},
		indexNode:        {Name: indexNode, Indexer: &memdb.StringFieldIndex{Field: "NodeID"}},
	}}
}

func byRegistration(a, b *structs.ServiceRegistration) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	if c := strings.Compare(a.ServiceName, b.ServiceName); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// ServiceRegistrations returns the registrations of namespace ("" or
// "*": every namespace), sorted by namespace, name and ID.
func (s *StateStore) ServiceRegistrations(ws memdb.WatchSet, namespace string) ([]*structs.ServiceRegistration, error) {
	iter, err := s.db.Txn(false).Get(TableServiceRegistrations, indexID)
	if err != nil {
		return nil, fmt.Errorf("list service registrations: %w", err)
	}
	keep := func(r *structs.ServiceRegistration) bool { return inNamespace(namespace, r.Namespace) }
	return collect(ws, iter, keep, byRegistration), nil
}

// ServiceRegistrationsByName returns the registrations of one service.
func (s *StateStore) ServiceRegistrationsByName(ws memdb.WatchSet, namespace, name string) ([]*structs.ServiceRegistration, error) {
	iter, err := s.db.Txn(false).Get(TableServiceRegistrations, indexServiceName, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("service %q: %w", name, err)
	}
	return collect(ws, iter, nil, byRegistration), nil
}

// ServiceRegistrationByID returns one registration, or nil.
func (s *StateStore) ServiceRegistrationByID(ws memdb.WatchSet, id string) (*structs.ServiceRegistration, error) {
	return first[*structs.ServiceRegistration](ws, s.db.Txn(false), TableServiceRegistrations, indexID, id)
}

// ServiceRegistrationsByAlloc returns the registrations of an allocation.
func (s *StateStore) ServiceRegistrationsByAlloc(ws memdb.WatchSet, allocID string) ([]*structs.ServiceRegistration, error) {
	return registrationsBy(ws, s.db.Txn(false), indexAlloc, allocID)
}

func registrationsBy(ws memdb.WatchSet, txn *memdb.Txn, index, arg string) ([]*structs.ServiceRegistration, error) {
	iter, err := txn.Get(TableServiceRegistrations, index, arg)
	if err != nil {
		return nil, fmt.Errorf("service registrations by %s: %w", index, err)
	}
	return collect(ws, iter, nil, byRegistration), nil
}

// UpsertServiceRegistrations stores registrations at index (see
// Txn.UpsertServiceRegistrations).
func (s *StateStore) UpsertServiceRegistrations(index uint64, regs []*structs.ServiceRegistration) error {
	return s.Write(index, func(tx *Txn) error { return tx.UpsertServiceRegistrations(regs) })
}

// UpsertServiceRegistrations stores copies of regs, keeping the
// CreateIndex of the rows they replace. A registration whose allocation
// is gone or finished is skipped (the client raced its end): it would
// never be removed.
func (tx *Txn) UpsertServiceRegistrations(regs []*structs.ServiceRegistration) error {
	changed := false
	for _, in := range regs {
		if in == nil || in.ID == "" || in.AllocID == "" || in.ServiceName == "" {
			return fmt.Errorf("upsert service registration: missing ID, alloc or name: %w", structs.ErrInvalid)
		}
		alloc, err := tx.AllocByID(in.AllocID)
		if err != nil {
			return err
		}
		if alloc == nil || alloc.ClientTerminalStatus() {
			continue
		}
		r := in.Copy()
		r.CreateIndex, r.ModifyIndex = tx.index, tx.index
		existing, err := first[*structs.ServiceRegistration](nil, tx.txn, TableServiceRegistrations, indexID, r.ID)
		if err != nil {
			return err
		}
		if existing != nil && existing.AllocID != r.AllocID {
			return fmt.Errorf("service registration %q belongs to allocation %s: %w", r.ID, existing.AllocID, structs.ErrPermissionDenied)
		}
		if existing != nil {
			r.CreateIndex = existing.CreateIndex
		}
		if err := tx.txn.Insert(TableServiceRegistrations, r); err != nil {
			return fmt.Errorf("upsert service registration %q: %w", r.ID, err)
		}
		changed = true
	}
	if !changed {
		return nil
	}
	return setIndex(tx.txn, TableServiceRegistrations, tx.index)
}

// DeleteServiceRegistration removes one registration at index (see
// Txn.DeleteServiceRegistration).
func (s *StateStore) DeleteServiceRegistration(index uint64, namespace, id string) error {
	return s.Write(index, func(tx *Txn) error { return tx.DeleteServiceRegistration(namespace, id) })
}

// DeleteServiceRegistration removes the registration id of namespace;
// one that does not exist there is structs.ErrNotFound.
func (tx *Txn) DeleteServiceRegistration(namespace, id string) error {
	r, err := first[*structs.ServiceRegistration](nil, tx.txn, TableServiceRegistrations, indexID, id)
	if err != nil {
		return err
	}
	if r == nil || r.Namespace != namespace {
		return fmt.Errorf("service registration %q: %w", id, structs.ErrNotFound)
	}
	if err := tx.txn.Delete(TableServiceRegistrations, r); err != nil {
		return fmt.Errorf("delete service registration %q: %w", id, err)
	}
	return setIndex(tx.txn, TableServiceRegistrations, tx.index)
}

// DeleteServiceRegistrationsByAlloc removes the registrations of allocs
// at index (see Txn.DeleteServiceRegistrationsByAlloc).
func (s *StateStore) DeleteServiceRegistrationsByAlloc(index uint64, allocIDs []string) error {
	return s.Write(index, func(tx *Txn) error { return tx.DeleteServiceRegistrationsByAlloc(allocIDs) })
}

// DeleteServiceRegistrationsByAlloc removes every registration of the
// allocations.
func (tx *Txn) DeleteServiceRegistrationsByAlloc(allocIDs []string) error {
	for _, id := range allocIDs {
		if err := tx.deleteRegistrationsBy(indexAlloc, id); err != nil {
			return err
		}
	}
	return nil
}

func (tx *Txn) deleteRegistrationsBy(index, arg string) error {
	regs, err := registrationsBy(nil, tx.txn, index, arg)
	if err != nil || len(regs) == 0 {
		return err
	}
	for _, r := range regs {
		if err := tx.txn.Delete(TableServiceRegistrations, r); err != nil {
			return fmt.Errorf("delete service registration %q: %w", r.ID, err)
		}
	}
	return setIndex(tx.txn, TableServiceRegistrations, tx.index)
}

// dropEndedServices removes the registrations of an allocation that
// finished (cur terminal on its client) or was deleted (cur nil), in the
// write that ended it.
func (tx *Txn) dropEndedServices(old, cur *structs.Allocation) error {
	switch {
	case cur != nil && !cur.ClientTerminalStatus():
		return nil
	case cur == nil && old == nil:
		return nil
	case cur == nil:
		return tx.deleteRegistrationsBy(indexAlloc, old.ID)
	}
	return tx.deleteRegistrationsBy(indexAlloc, cur.ID)
}

// dropNodeServices removes the registrations of a node that went down:
// nobody checks them any more.
func (tx *Txn) dropNodeServices(nodeID, status string) error {
	if status != structs.NodeStatusDown {
		return nil
	}
	return tx.deleteRegistrationsBy(indexNode, nodeID)
}

// ServiceRegistrationRestore inserts a registration as it is.
func (r *StateRestore) ServiceRegistrationRestore(reg *structs.ServiceRegistration) error {
	return r.insert(TableServiceRegistrations, reg.ID, reg)
}

// ServiceListStubs groups registrations by namespace, then service
// name, with each name's tags de-duplicated (Nomad's list shape).
func ServiceListStubs(regs []*structs.ServiceRegistration) []*structs.ServiceRegistrationListStub {
	var out []*structs.ServiceRegistrationListStub
	for _, r := range regs { // sorted by namespace, then name
		if len(out) == 0 || out[len(out)-1].Namespace != r.Namespace {
			out = append(out, &structs.ServiceRegistrationListStub{Namespace: r.Namespace, Services: []*structs.ServiceRegistrationStub{}})
		}
		ns := out[len(out)-1]
		if n := len(ns.Services); n == 0 || ns.Services[n-1].ServiceName != r.ServiceName {
			ns.Services = append(ns.Services, &structs.ServiceRegistrationStub{ServiceName: r.ServiceName, Tags: []string{}})
		}
		svc := ns.Services[len(ns.Services)-1]
		for _, tag := range r.Tags {
			if !slices.Contains(svc.Tags, tag) {
				svc.Tags = append(svc.Tags, tag)
			}
		}
	}
	for _, ns := range out {
		for _, s := range ns.Services {
			slices.Sort(s.Tags)
		}
	}
	return out
}
