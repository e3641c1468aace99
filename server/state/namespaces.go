package state

import (
	"fmt"
	"slices"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// Tables of namespaces and quota specifications, written by the FSM.
const (
	TableNamespaces = "namespaces"
	TableQuotas     = "quotas"
)

// indexQuota indexes namespaces by the quota they name.
const indexQuota = "quota"

func namespacesTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableNamespaces, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex("Name"),
		indexQuota: {
			Name:         indexQuota,
			AllowMissing: true,
			Indexer:      &memdb.StringFieldIndex{Field: "Quota"},
		},
	}}
}

func quotasTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableQuotas, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex("Name"),
	}}
}

// NamespaceByName returns the namespace called name, or nil. The default
// namespace always exists: until an operator changes it, it is
// structs.DefaultNamespaceObject.
func (s *StateStore) NamespaceByName(ws memdb.WatchSet, name string) (*structs.Namespace, error) {
	return namespaceByName(ws, s.db.Txn(false), name)
}

func namespaceByName(ws memdb.WatchSet, txn *memdb.Txn, name string) (*structs.Namespace, error) {
	ns, err := first[*structs.Namespace](ws, txn, TableNamespaces, indexID, name)
	if err != nil || ns != nil || name != structs.DefaultNamespace {
		return ns, err
	}
	return structs.DefaultNamespaceObject(), nil
}

// Namespaces returns the namespaces whose name starts with prefix, the
// default one included, sorted by name.
func (s *StateStore) Namespaces(ws memdb.WatchSet, prefix string) ([]*structs.Namespace, error) {
	iter, err := s.db.Txn(false).Get(TableNamespaces, indexID+"_prefix", prefix)
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	byName := func(a, b *structs.Namespace) int { return strings.Compare(a.Name, b.Name) }
	out := collect(ws, iter, nil, byName)
	stored := slices.ContainsFunc(out, func(ns *structs.Namespace) bool { return ns.Name == structs.DefaultNamespace })
	if !stored && strings.HasPrefix(structs.DefaultNamespace, prefix) {
		out = append(out, structs.DefaultNamespaceObject())
		slices.SortFunc(out, byName)
	}
	return out, nil
}

// UpsertNamespaces creates or replaces namespaces at index (see
// Txn.UpsertNamespaces).
func (s *StateStore) UpsertNamespaces(index uint64, namespaces []*structs.Namespace) error {
	return s.Write(index, func(tx *Txn) error { return tx.UpsertNamespaces(namespaces) })
}

// UpsertNamespaces validates and stores copies of namespaces, keeping the
// CreateIndex of those that exist. A namespace naming a quota that does
// not exist is refused (ErrInvalid), as is an invalid one.
func (tx *Txn) UpsertNamespaces(namespaces []*structs.Namespace) error {
	for _, in := range namespaces {
		if in == nil {
			return fmt.Errorf("upsert namespace: missing: %w", structs.ErrInvalid)
		}
		if err := in.Validate(); err != nil {
			return fmt.Errorf("upsert namespace: %w", err)
		}
		if in.Quota != "" {
			q, err := first[*structs.QuotaSpec](nil, tx.txn, TableQuotas, indexID, in.Quota)
			if err != nil {
				return err
			}
			if q == nil {
				return fmt.Errorf("namespace %q: quota %q does not exist: %w", in.Name, in.Quota, structs.ErrInvalid)
			}
		}
		ns := in.Copy()
		ns.CreateIndex, ns.ModifyIndex = tx.index, tx.index
		existing, err := first[*structs.Namespace](nil, tx.txn, TableNamespaces, indexID, ns.Name)
		if err != nil {
			return err
		}
		if existing != nil {
			ns.CreateIndex = existing.CreateIndex
		}
		if err := tx.txn.Insert(TableNamespaces, ns); err != nil {
			return fmt.Errorf("upsert namespace %q: %w", ns.Name, err)
		}
	}
	if len(namespaces) == 0 {
		return nil
	}
	return setIndex(tx.txn, TableNamespaces, tx.index)
}

// DeleteNamespaces removes namespaces at index (see Txn.DeleteNamespaces).
func (s *StateStore) DeleteNamespaces(index uint64, names []string) error {
	return s.Write(index, func(tx *Txn) error { return tx.DeleteNamespaces(names) })
}

// DeleteNamespaces removes the namespaces called names. The default
// namespace (structs.ErrDefaultNamespace), one with jobs
// (structs.ErrNamespaceInUse) and one that does not exist
// (structs.ErrNotFound) are refused, and then nothing is deleted.
func (tx *Txn) DeleteNamespaces(names []string) error {
	for _, name := range names {
		if name == structs.DefaultNamespace {
			return fmt.Errorf("delete namespace %q: %w", name, structs.ErrDefaultNamespace)
		}
		existing, err := first[*structs.Namespace](nil, tx.txn, TableNamespaces, indexID, name)
		if err != nil {
			return err
		}
		if existing == nil {
			return fmt.Errorf("namespace %q: %w", name, structs.ErrNotFound)
		}
		job, err := tx.txn.First(TableJobs, indexID+"_prefix", name, "")
		if err != nil {
			return fmt.Errorf("delete namespace %q: %w", name, err)
		}
		if job != nil {
			return fmt.Errorf("delete namespace %q: %w (job %q; purge its jobs first)",
				name, structs.ErrNamespaceInUse, job.(*structs.Job).ID)
		}
		if err := namespaceHasNoVariables(tx.txn, name); err != nil { // variables.go
			return err
		}
		if err := tx.txn.Delete(TableNamespaces, existing); err != nil {
			return fmt.Errorf("delete namespace %q: %w", name, err)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return setIndex(tx.txn, TableNamespaces, tx.index)
}

// QuotaSpecByName returns the quota specification called name, or nil.
func (s *StateStore) QuotaSpecByName(ws memdb.WatchSet, name string) (*structs.QuotaSpec, error) {
	return first[*structs.QuotaSpec](ws, s.db.Txn(false), TableQuotas, indexID, name)
}

// QuotaSpecs returns the quota specifications whose name starts with
// prefix, sorted by name.
func (s *StateStore) QuotaSpecs(ws memdb.WatchSet, prefix string) ([]*structs.QuotaSpec, error) {
	iter, err := s.db.Txn(false).Get(TableQuotas, indexID+"_prefix", prefix)
	if err != nil {
		return nil, fmt.Errorf("list quotas: %w", err)
	}
	return collect(ws, iter, nil, func(a, b *structs.QuotaSpec) int { return strings.Compare(a.Name, b.Name) }), nil
}

// UpsertQuotaSpecs creates or replaces quota specifications at index (see
// Txn.UpsertQuotaSpecs).
func (s *StateStore) UpsertQuotaSpecs(index uint64, quotas []*structs.QuotaSpec) error {
	return s.Write(index, func(tx *Txn) error { return tx.UpsertQuotaSpecs(quotas) })
}

// UpsertQuotaSpecs validates and stores copies of quotas, keeping the
// CreateIndex of those that exist.
func (tx *Txn) UpsertQuotaSpecs(quotas []*structs.QuotaSpec) error {
	for _, in := range quotas {
		if in == nil {
			return fmt.Errorf("upsert quota: missing: %w", structs.ErrInvalid)
		}
		if err := in.CheckShape(); err != nil {
			return fmt.Errorf("upsert quota: %w", err)
		}
		if err := in.Validate(); err != nil {
			return fmt.Errorf("upsert quota: %w", err)
		}
		q := in.Copy()
		q.CreateIndex, q.ModifyIndex = tx.index, tx.index
		existing, err := first[*structs.QuotaSpec](nil, tx.txn, TableQuotas, indexID, q.Name)
		if err != nil {
			return err
		}
		if existing != nil {
			q.CreateIndex = existing.CreateIndex
		}
		if err := tx.txn.Insert(TableQuotas, q); err != nil {
			return fmt.Errorf("upsert quota %q: %w", q.Name, err)
		}
	}
	if len(quotas) == 0 {
		return nil
	}
	return setIndex(tx.txn, TableQuotas, tx.index)
}

// DeleteQuotaSpecs removes quota specifications at index (see
// Txn.DeleteQuotaSpecs).
func (s *StateStore) DeleteQuotaSpecs(index uint64, names []string) error {
	return s.Write(index, func(tx *Txn) error { return tx.DeleteQuotaSpecs(names) })
}

// DeleteQuotaSpecs removes the quota specifications called names. One a
// namespace names (structs.ErrQuotaInUse) or that does not exist
// (structs.ErrNotFound) is refused, and then nothing is deleted.
func (tx *Txn) DeleteQuotaSpecs(names []string) error {
	for _, name := range names {
		existing, err := first[*structs.QuotaSpec](nil, tx.txn, TableQuotas, indexID, name)
		if err != nil {
			return err
		}
		if existing == nil {
			return fmt.Errorf("quota %q: %w", name, structs.ErrNotFound)
		}
		user, err := tx.txn.First(TableNamespaces, indexQuota, name)
		if err != nil {
			return fmt.Errorf("delete quota %q: %w", name, err)
		}
		if user != nil {
			return fmt.Errorf("delete quota %q: %w (namespace %q)", name, structs.ErrQuotaInUse, user.(*structs.Namespace).Name)
		}
		if err := tx.txn.Delete(TableQuotas, existing); err != nil {
			return fmt.Errorf("delete quota %q: %w", name, err)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return setIndex(tx.txn, TableQuotas, tx.index)
}

// NamespaceRestore inserts a namespace as it is.
func (r *StateRestore) NamespaceRestore(ns *structs.Namespace) error {
	return r.insert(TableNamespaces, ns.Name, ns)
}

// QuotaSpecRestore inserts a quota specification as it is.
func (r *StateRestore) QuotaSpecRestore(q *structs.QuotaSpec) error {
	return r.insert(TableQuotas, q.Name, q)
}
