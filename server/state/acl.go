package state

import (
	"fmt"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// Tables of ACL policies and tokens, written by the FSM. The index table
// also keeps TableACLBootstrap: the index of the last bootstrap, 0 while
// none happened.
const (
	TableACLPolicies  = "acl_policies"
	TableACLTokens    = "acl_tokens"
	TableACLBootstrap = "acl_token_bootstrap"
)

// indexSecret indexes tokens by their secret.
const indexSecret = "secret"

func aclPoliciesTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableACLPolicies, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex("Name"),
	}}
}

func aclTokensTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableACLTokens, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex("AccessorID"),
		indexSecret: {
			Name:    indexSecret,
			Unique:  true,
			Indexer: &memdb.StringFieldIndex{Field: "SecretID"},
		},
	}}
}

// ACLPolicyByName returns the policy called name, or nil.
func (s *StateStore) ACLPolicyByName(ws memdb.WatchSet, name string) (*structs.ACLPolicy, error) {
	return first[*structs.ACLPolicy](ws, s.db.Txn(false), TableACLPolicies, indexID, name)
}

// ACLPolicies returns the policies whose name starts with prefix, sorted
// by name.
func (s *StateStore) ACLPolicies(ws memdb.WatchSet, prefix string) ([]*structs.ACLPolicy, error) {
	iter, err := s.db.Txn(false).Get(TableACLPolicies, indexID+"_prefix", prefix)
	if err != nil {
		return nil, fmt.Errorf("list ACL policies: %w", err)
	}
	return collect(ws, iter, nil, func(a, b *structs.ACLPolicy) int { return strings.Compare(a.Name, b.Name) }), nil
}

// UpsertACLPolicies stores copies of policies at index, keeping the
// CreateIndex of each one it replaces. The endpoint checked the rules.
func (s *StateStore) UpsertACLPolicies(index uint64, policies []*structs.ACLPolicy) error {
	return s.Write(index, func(tx *Txn) error {
		for _, in := range policies {
			if in == nil || in.Name == "" {
				return fmt.Errorf("upsert ACL policy: %w: a policy has no name", structs.ErrInvalid)
			}
			p := *in
			p.SetHash()
			p.CreateIndex, p.ModifyIndex = tx.index, tx.index
			existing, err := first[*structs.ACLPolicy](nil, tx.txn, TableACLPolicies, indexID, p.Name)
			if err != nil {
				return err
			}
			if existing != nil {
				p.CreateIndex = existing.CreateIndex
			}
			if err := tx.txn.Insert(TableACLPolicies, &p); err != nil {
				return fmt.Errorf("upsert ACL policy %q: %w", p.Name, err)
			}
		}
		return setIndex(tx.txn, TableACLPolicies, tx.index)
	})
}

// DeleteACLPolicies removes policies by name; an unknown name is
// structs.ErrNotFound and nothing is removed. Tokens that name a removed
// policy keep its name and lose what it granted.
func (s *StateStore) DeleteACLPolicies(index uint64, names []string) error {
	return s.Write(index, func(tx *Txn) error {
		for _, name := range names {
			existing, err := first[*structs.ACLPolicy](nil, tx.txn, TableACLPolicies, indexID, name)
			if err != nil {
				return err
			}
			if existing == nil {
				return fmt.Errorf("ACL policy %q: %w", name, structs.ErrNotFound)
			}
			if err := tx.txn.Delete(TableACLPolicies, existing); err != nil {
				return fmt.Errorf("delete ACL policy %q: %w", name, err)
			}
		}
		return setIndex(tx.txn, TableACLPolicies, tx.index)
	})
}

// ACLTokenByAccessor returns the token with accessor id, or nil.
func (s *StateStore) ACLTokenByAccessor(ws memdb.WatchSet, id string) (*structs.ACLToken, error) {
	return first[*structs.ACLToken](ws, s.db.Txn(false), TableACLTokens, indexID, id)
}

// ACLTokenBySecret returns the token whose secret is secret, or nil.
func (s *StateStore) ACLTokenBySecret(ws memdb.WatchSet, secret string) (*structs.ACLToken, error) {
	if secret == "" {
		return nil, nil
	}
	return first[*structs.ACLToken](ws, s.db.Txn(false), TableACLTokens, indexSecret, secret)
}

// ACLTokens returns the tokens whose accessor starts with prefix, sorted
// by accessor.
func (s *StateStore) ACLTokens(ws memdb.WatchSet, prefix string) ([]*structs.ACLToken, error) {
	iter, err := s.db.Txn(false).Get(TableACLTokens, indexID+"_prefix", prefix)
	if err != nil {
		return nil, fmt.Errorf("list ACL tokens: %w", err)
	}
	return collect(ws, iter, nil, func(a, b *structs.ACLToken) int { return strings.Compare(a.AccessorID, b.AccessorID) }), nil
}

// UpsertACLTokens stores copies of tokens at index (see Txn.UpsertACLTokens).
func (s *StateStore) UpsertACLTokens(index uint64, tokens []*structs.ACLToken) error {
	return s.Write(index, func(tx *Txn) error { return tx.UpsertACLTokens(tokens) })
}

// UpsertACLTokens stores copies of tokens, keeping the CreateIndex of
// each one it replaces. A token must have an accessor and a secret; a
// secret another token holds is refused (structs.ErrConflict).
func (tx *Txn) UpsertACLTokens(tokens []*structs.ACLToken) error {
	for _, in := range tokens {
		if in == nil || in.AccessorID == "" || in.SecretID == "" {
			return fmt.Errorf("upsert ACL token: %w: a token lacks its accessor or secret", structs.ErrInvalid)
		}
		t := in.Copy()
		t.SetHash()
		t.CreateIndex, t.ModifyIndex = tx.index, tx.index
		existing, err := first[*structs.ACLToken](nil, tx.txn, TableACLTokens, indexID, t.AccessorID)
		if err != nil {
			return err
		}
		if existing != nil {
			t.CreateIndex = existing.CreateIndex
		}
		holder, err := first[*structs.ACLToken](nil, tx.txn, TableACLTokens, indexSecret, t.SecretID)
		if err != nil {
			return err
		}
		if holder != nil && holder.AccessorID != t.AccessorID {
			return fmt.Errorf("upsert ACL token %s: %w: its secret belongs to another token", t.AccessorID, structs.ErrConflict)
		}
		if err := tx.txn.Insert(TableACLTokens, t); err != nil {
			return fmt.Errorf("upsert ACL token %s: %w", t.AccessorID, err)
		}
	}
	return setIndex(tx.txn, TableACLTokens, tx.index)
}

// DeleteACLTokens removes tokens by accessor; an unknown accessor is
// structs.ErrNotFound and nothing is removed.
func (s *StateStore) DeleteACLTokens(index uint64, ids []string) error {
	return s.Write(index, func(tx *Txn) error {
		for _, id := range ids {
			existing, err := first[*structs.ACLToken](nil, tx.txn, TableACLTokens, indexID, id)
			if err != nil {
				return err
			}
			if existing == nil {
				return fmt.Errorf("ACL token %s: %w", id, structs.ErrNotFound)
			}
			if err := tx.txn.Delete(TableACLTokens, existing); err != nil {
				return fmt.Errorf("delete ACL token %s: %w", id, err)
			}
		}
		return setIndex(tx.txn, TableACLTokens, tx.index)
	})
}

// BootstrapACLToken stores the first management token at index. Once a
// bootstrap happened it is refused (structs.ErrConflict, naming the
// index to reset with) unless resetIndex is the last bootstrap's index.
func (s *StateStore) BootstrapACLToken(index, resetIndex uint64, token *structs.ACLToken) error {
	return s.Write(index, func(tx *Txn) error {
		raw, err := tx.txn.First(TableIndex, indexID, TableACLBootstrap)
		if err != nil {
			return fmt.Errorf("read ACL bootstrap index: %w", err)
		}
		if raw != nil {
			if last := raw.(*IndexEntry).Value; last != 0 && resetIndex != last {
				return fmt.Errorf("ACL bootstrap: %w: already done (reset index: %d)", structs.ErrInvalid, last)
			}
		}
		if err := tx.UpsertACLTokens([]*structs.ACLToken{token}); err != nil {
			return err
		}
		return tx.txn.Insert(TableIndex, &IndexEntry{Key: TableACLBootstrap, Value: tx.index})
	})
}

// ACLPolicyRestore inserts a policy as it is.
func (r *StateRestore) ACLPolicyRestore(p *structs.ACLPolicy) error {
	return r.insert(TableACLPolicies, p.Name, p)
}

// ACLTokenRestore inserts a token as it is.
func (r *StateRestore) ACLTokenRestore(t *structs.ACLToken) error {
	return r.insert(TableACLTokens, t.AccessorID, t)
}
