package state

import (
	"errors"
	"testing"

	"github.com/droverhq/drover/structs"
)

func sealed(ns, path string) *structs.VariableEncrypted {
	return &structs.VariableEncrypted{
		VariableMetadata: structs.VariableMetadata{Namespace: ns, Path: path, CreateTime: 10, ModifyTime: 10},
		KeyID:            "k1", Nonce: []byte("nonce-123456"), Data: []byte("ciphertext"),
	}
}

func TestVariables_UpsertCASListDelete(t *testing.T) {
	s := newTestStore(t)
	must(t, s.UpsertVariable(5, sealed("default", "app/a"), nil))
	must(t, s.UpsertVariable(6, sealed("default", "app/b"), nil))
	must(t, s.UpsertVariable(7, sealed("team", "app/a"), nil))

	later := sealed("default", "app/a")
	later.CreateTime, later.ModifyTime = 99, 99
	if err := s.UpsertVariable(8, later, new(uint64)); !errors.Is(err, structs.ErrConflict) {
		t.Fatalf("cas 0 on an existing variable = %v, want conflict", err)
	}
	five := uint64(5)
	must(t, s.UpsertVariable(9, later, &five))
	got, err := s.VariableByPath(nil, "default", "app/a")
	if err != nil || got.CreateIndex != 5 || got.ModifyIndex != 9 || got.CreateTime != 10 || got.ModifyTime != 99 {
		t.Fatalf("after cas update = %+v, %v; want create index and time kept", got, err)
	}
	if later.CreateIndex != 0 {
		t.Error("the caller's object was changed")
	}

	tests := []struct {
		ns, prefix string
		want       []string
	}{
		{"default", "app/", []string{"default:app/a", "default:app/b"}},
		{"default", "app/b", []string{"default:app/b"}},
		{"*", "app/a", []string{"default:app/a", "team:app/a"}},
		{"team", "", []string{"team:app/a"}},
		{"other", "", nil},
	}
	for _, tt := range tests {
		vars, err := s.Variables(nil, tt.ns, tt.prefix)
		must(t, err)
		var got []string
		for _, v := range vars {
			got = append(got, v.Namespace+":"+v.Path)
		}
		if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) || (len(got) > 1 && got[1] != tt.want[1]) {
			t.Errorf("Variables(%q, %q) = %v, want %v", tt.ns, tt.prefix, got, tt.want)
		}
	}

	if err := s.DeleteVariable(10, "default", "app/b", &five); !errors.Is(err, structs.ErrConflict) {
		t.Fatalf("delete with a stale index = %v, want conflict", err)
	}
	must(t, s.DeleteVariable(11, "default", "app/b", nil))
	must(t, s.DeleteVariable(12, "default", "app/none", nil)) // nothing to delete: not an error
	if v, _ := s.VariableByPath(nil, "default", "app/b"); v != nil {
		t.Errorf("deleted variable still there: %+v", v)
	}
	if idx, _ := s.Index(TableVariables); idx != 11 {
		t.Errorf("variables index = %d, want 11", idx)
	}
	if err := s.UpsertVariable(13, &structs.VariableEncrypted{VariableMetadata: structs.VariableMetadata{Namespace: "default", Path: "x"}}, nil); !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("an unsealed variable = %v, want refused", err)
	}
}

func TestRootKeyMetas(t *testing.T) {
	s := newTestStore(t)
	if m, err := s.ActiveRootKeyMeta(nil); m != nil || err != nil {
		t.Fatalf("no key yet = %+v, %v", m, err)
	}
	must(t, s.UpsertRootKeyMeta(3, &structs.RootKeyMeta{KeyID: "k1", State: structs.RootKeyStateActive}))
	must(t, s.UpsertRootKeyMeta(4, &structs.RootKeyMeta{KeyID: "k2", State: "inactive"}))
	if m, _ := s.ActiveRootKeyMeta(nil); m == nil || m.KeyID != "k1" || m.CreateIndex != 3 {
		t.Errorf("active key = %+v, want k1", m)
	}
}

// TestDeleteNamespaceWithVariablesRefused: a namespace holding variables
// is not deleted (its secrets would pass to the next namespace of that
// name); a namespace whose name only prefixes it is, and so is the
// namespace once its variables are gone.
func TestDeleteNamespaceWithVariablesRefused(t *testing.T) {
	s := newTestStore(t)
	must(t, s.UpsertNamespaces(1, []*structs.Namespace{{Name: "team"}, {Name: "tea"}}))
	must(t, s.UpsertVariable(2, sealed("team", "db/pass"), nil))
	err := s.DeleteNamespaces(3, []string{"team"})
	if !errors.Is(err, structs.ErrNamespaceInUse) {
		t.Fatalf("delete a namespace with a variable = %v, want in use", err)
	}
	if ns, _ := s.NamespaceByName(nil, "team"); ns == nil {
		t.Fatal("namespace deleted despite its variable")
	}
	must(t, s.DeleteNamespaces(4, []string{"tea"}))
	must(t, s.DeleteVariable(5, "team", "db/pass", nil))
	must(t, s.DeleteNamespaces(6, []string{"team"}))
}
