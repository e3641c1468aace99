package fsm

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/droverhq/drover/structs"
)

func sealedVar(path string) *structs.VariableEncrypted {
	return &structs.VariableEncrypted{
		VariableMetadata: structs.VariableMetadata{Namespace: "default", Path: path, CreateTime: 5, ModifyTime: 5},
		KeyID:            "k1", Nonce: []byte("123456789012"), Data: []byte("ciphertext-" + path),
	}
}

// TestVariablesApplyAndSnapshot: writes, a lost check-and-set, and a
// snapshot round trip of the sealed variables and the key metadata.
func TestVariablesApplyAndSnapshot(t *testing.T) {
	f, _ := newTestFSM(t)
	apply(t, f, 10, structs.RootKeyMetaUpsertRequestType, &structs.RootKeyMetaUpsertRequest{Meta: &structs.RootKeyMeta{KeyID: "k1", State: structs.RootKeyStateActive}})
	apply(t, f, 11, structs.VariableUpsertRequestType, &structs.VariableUpsertEntry{Var: sealedVar("a/b")})
	apply(t, f, 12, structs.VariableUpsertRequestType, &structs.VariableUpsertEntry{Var: sealedVar("a/c")})
	stale := uint64(3)
	resp := f.Apply(logEntry(t, 13, structs.VariableUpsertRequestType, &structs.VariableUpsertEntry{Var: sealedVar("a/b"), CheckIndex: &stale}))
	if err, _ := resp.(error); !errors.Is(err, structs.ErrConflict) {
		t.Fatalf("stale check-and-set = %v, want conflict", resp)
	}
	zero := uint64(0)
	resp = f.Apply(logEntry(t, 14, structs.VariableDeleteRequestType, &structs.VariableDeleteEntry{Namespace: "default", Path: "a/c", CheckIndex: &zero}))
	if err, _ := resp.(error); !errors.Is(err, structs.ErrConflict) {
		t.Fatalf("delete with cas 0 of an existing variable = %v, want conflict", resp)
	}

	sink := persist(t, f)
	dst, _ := newTestFSM(t)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	want, _ := f.State().Variables(nil, "*", "")
	got, _ := dst.State().Variables(nil, "*", "")
	if len(got) != 2 || !reflect.DeepEqual(got, want) {
		t.Errorf("restored variables = %+v, want %+v", got, want)
	}
	if m, _ := dst.State().ActiveRootKeyMeta(nil); m == nil || m.KeyID != "k1" {
		t.Errorf("restored active key = %+v", m)
	}
}
