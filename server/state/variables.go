package state

import (
	"cmp"
	"fmt"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// TableVariables holds variables, sealed (structs.VariableEncrypted): the
// state store never sees their items in the clear. TableRootKeys holds
// the root keys' metadata; the keys live in each server's keystore.
const (
	TableVariables = "variables"
	TableRootKeys  = "root_keys"
)

func variablesTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableVariables, Indexes: map[string]*memdb.IndexSchema{
		indexID: namespacedIndex(indexID, "Path", true),
	}}
}

func rootKeysTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableRootKeys, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex("KeyID"),
	}}
}

// VariableByPath returns the sealed variable at path in namespace ns, or
// nil.
func (s *StateStore) VariableByPath(ws memdb.WatchSet, ns, path string) (*structs.VariableEncrypted, error) {
	return first[*structs.VariableEncrypted](ws, s.db.Txn(false), TableVariables, indexID, ns, path)
}

// Variables returns the sealed variables in namespace ns ("*" or "": all)
// whose path starts with prefix, sorted by namespace then path.
func (s *StateStore) Variables(ws memdb.WatchSet, ns, prefix string) ([]*structs.VariableEncrypted, error) {
	txn := s.db.Txn(false)
	var iter memdb.ResultIterator
	var err error
	if allNamespaces(ns) {
		iter, err = txn.Get(TableVariables, indexID)
	} else {
		iter, err = txn.Get(TableVariables, indexID+"_prefix", ns, prefix)
	}
	if err != nil {
		return nil, fmt.Errorf("list variables: %w", err)
	}
	keep := func(v *structs.VariableEncrypted) bool {
		return inNamespace(ns, v.Namespace) && strings.HasPrefix(v.Path, prefix)
	}
	byNSPath := func(a, b *structs.VariableEncrypted) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Path, b.Path))
	}
	return collect(ws, iter, keep, byNSPath), nil
}

// UpsertVariable stores a sealed variable at index (see Txn.UpsertVariable).
func (s *StateStore) UpsertVariable(index uint64, v *structs.VariableEncrypted, checkIndex *uint64) error {
	return s.Write(index, func(tx *Txn) error { return tx.UpsertVariable(v, checkIndex) })
}

// UpsertVariable stores a copy of a sealed variable, keeping the
// CreateIndex and CreateTime of the one it replaces. With checkIndex set
// it is check-and-set: the stored variable's ModifyIndex must be
// *checkIndex (0: there must be none), else the error wraps
// structs.ErrConflict and nothing changes.
func (tx *Txn) UpsertVariable(in *structs.VariableEncrypted, checkIndex *uint64) error {
	if in == nil {
		return fmt.Errorf("upsert variable: missing variable: %w", structs.ErrInvalid)
	}
	if err := structs.ValidateVariablePath(in.Path); err != nil {
		return fmt.Errorf("upsert variable: %w", err)
	}
	if in.KeyID == "" || len(in.Data) == 0 {
		return fmt.Errorf("upsert variable %q: not sealed: %w", in.Path, structs.ErrInvalid)
	}
	existing, err := first[*structs.VariableEncrypted](nil, tx.txn, TableVariables, indexID, in.Namespace, in.Path)
	if err != nil {
		return err
	}
	if err := checkVariableIndex(existing, checkIndex, in.Path); err != nil {
		return err
	}
	v := in.Copy()
	v.CreateIndex, v.ModifyIndex = tx.index, tx.index
	if existing != nil {
		v.CreateIndex, v.CreateTime = existing.CreateIndex, existing.CreateTime
	}
	if err := tx.txn.Insert(TableVariables, v); err != nil {
		return fmt.Errorf("upsert variable %q: %w", v.Path, err)
	}
	return setIndex(tx.txn, TableVariables, tx.index)
}

// checkVariableIndex is the check of a check-and-set write or delete.
func checkVariableIndex(existing *structs.VariableEncrypted, checkIndex *uint64, path string) error {
	if checkIndex == nil {
		return nil
	}
	var have uint64
	if existing != nil {
		have = existing.ModifyIndex
	}
	if have != *checkIndex {
		return fmt.Errorf("variable %q: check-and-set: index is %d, not %d: %w", path, have, *checkIndex, structs.ErrConflict)
	}
	return nil
}

// DeleteVariable removes a variable at index (see Txn.DeleteVariable).
func (s *StateStore) DeleteVariable(index uint64, ns, path string, checkIndex *uint64) error {
	return s.Write(index, func(tx *Txn) error { return tx.DeleteVariable(ns, path, checkIndex) })
}

// DeleteVariable removes the variable at path, check-and-set as
// UpsertVariable. Deleting one that does not exist is not an error
// (Nomad's purge answers the same), unless a check index other than 0
// says it should.
func (tx *Txn) DeleteVariable(ns, path string, checkIndex *uint64) error {
	existing, err := first[*structs.VariableEncrypted](nil, tx.txn, TableVariables, indexID, ns, path)
	if err != nil {
		return err
	}
	if err := checkVariableIndex(existing, checkIndex, path); err != nil {
		return err
	}
	if existing == nil {
		return nil
	}
	if err := tx.txn.Delete(TableVariables, existing); err != nil {
		return fmt.Errorf("delete variable %q: %w", path, err)
	}
	return setIndex(tx.txn, TableVariables, tx.index)
}

// RootKeyMetas returns every root key's metadata, oldest first.
func (s *StateStore) RootKeyMetas(ws memdb.WatchSet) ([]*structs.RootKeyMeta, error) {
	iter, err := s.db.Txn(false).Get(TableRootKeys, indexID)
	if err != nil {
		return nil, fmt.Errorf("list root keys: %w", err)
	}
	return collect(ws, iter, nil, func(a, b *structs.RootKeyMeta) int {
		return cmp.Or(cmp.Compare(a.CreateIndex, b.CreateIndex), strings.Compare(a.KeyID, b.KeyID))
	}), nil
}

// ActiveRootKeyMeta returns the newest active root key's metadata, or nil.
func (s *StateStore) ActiveRootKeyMeta(ws memdb.WatchSet) (*structs.RootKeyMeta, error) {
	metas, err := s.RootKeyMetas(ws)
	if err != nil {
		return nil, err
	}
	for i := len(metas) - 1; i >= 0; i-- {
		if metas[i].State == structs.RootKeyStateActive {
			return metas[i], nil
		}
	}
	return nil, nil
}

// UpsertRootKeyMeta stores a root key's metadata at index and marks the
// keys named in deactivate inactive.
func (s *StateStore) UpsertRootKeyMeta(index uint64, in *structs.RootKeyMeta, deactivate ...string) error {
	return s.Write(index, func(tx *Txn) error {
		if in == nil || in.KeyID == "" {
			return fmt.Errorf("upsert root key: missing key ID: %w", structs.ErrInvalid)
		}
		for _, id := range deactivate {
			old, err := first[*structs.RootKeyMeta](nil, tx.txn, TableRootKeys, indexID, id)
			if err != nil || old == nil || id == in.KeyID {
				continue
			}
			c := *old
			c.State, c.ModifyIndex = structs.RootKeyStateInactive, tx.index
			if err := tx.txn.Insert(TableRootKeys, &c); err != nil {
				return fmt.Errorf("deactivate root key %s: %w", id, err)
			}
		}
		m := *in
		m.CreateIndex, m.ModifyIndex = tx.index, tx.index
		existing, err := first[*structs.RootKeyMeta](nil, tx.txn, TableRootKeys, indexID, m.KeyID)
		if err != nil {
			return err
		}
		if existing != nil {
			m.CreateIndex = existing.CreateIndex
		}
		if err := tx.txn.Insert(TableRootKeys, &m); err != nil {
			return fmt.Errorf("upsert root key %s: %w", m.KeyID, err)
		}
		return setIndex(tx.txn, TableRootKeys, tx.index)
	})
}

// VariableRestore inserts a sealed variable as it is.
func (r *StateRestore) VariableRestore(v *structs.VariableEncrypted) error {
	return r.insert(TableVariables, v.Path, v)
}

// RootKeyMetaRestore inserts a root key's metadata as it is.
func (r *StateRestore) RootKeyMetaRestore(m *structs.RootKeyMeta) error {
	return r.insert(TableRootKeys, m.KeyID, m)
}

// namespaceHasNoVariables refuses (structs.ErrNamespaceInUse) to delete a
// namespace that still holds variables, as Nomad does: they would
// outlive it, sealed but readable by whoever gets a namespace of that
// name next.
func namespaceHasNoVariables(txn *memdb.Txn, name string) error {
	raw, err := txn.First(TableVariables, indexID+"_prefix", name, "")
	if err != nil {
		return fmt.Errorf("delete namespace %q: %w", name, err)
	}
	if raw != nil {
		return fmt.Errorf("delete namespace %q: %w (variable %q; delete its variables first)",
			name, structs.ErrNamespaceInUse, raw.(*structs.VariableEncrypted).Path)
	}
	return nil
}
