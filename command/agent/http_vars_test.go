package agent

import (
	"errors"
	"testing"

	nomad "github.com/hashicorp/nomad/api"
)

// TestVariables_NomadClient drives /v1/var and /v1/vars with the official
// Nomad Go client: create, read, a check-and-set conflict it decodes,
// list by prefix, and delete.
func TestVariables_NomadClient(t *testing.T) {
	_, base := newTestAgent(t)
	c, err := nomad.NewClient(&nomad.Config{Address: base})
	if err != nil {
		t.Fatal(err)
	}
	vars := c.Variables()
	created, _, err := vars.Create(&nomad.Variable{Path: "nomad/jobs/web", Items: nomad.VariableItems{"db_pass": "s3cret"}}, nil)
	if err != nil || created.ModifyIndex == 0 || created.Namespace != "default" {
		t.Fatalf("Create = %+v, %v", created, err)
	}
	got, _, err := vars.Read("nomad/jobs/web", nil)
	if err != nil || got.Items["db_pass"] != "s3cret" {
		t.Fatalf("Read = %+v, %v", got, err)
	}
	_, _, err = vars.CheckedCreate(&nomad.Variable{Path: "nomad/jobs/web", Items: nomad.VariableItems{"x": "y"}}, nil)
	var conflict nomad.ErrCASConflict
	if !errors.As(err, &conflict) || conflict.Conflict.ModifyIndex != created.ModifyIndex {
		t.Fatalf("CheckedCreate of an existing variable = %v, want a CAS conflict at %d", err, created.ModifyIndex)
	}
	got.Items["db_pass"] = "n3w"
	if _, _, err := vars.CheckedUpdate(got, nil); err != nil {
		t.Fatalf("CheckedUpdate: %v", err)
	}
	list, _, err := vars.PrefixList("nomad/", nil)
	if err != nil || len(list) != 1 || list[0].Path != "nomad/jobs/web" {
		t.Fatalf("PrefixList = %+v, %v", list, err)
	}
	if _, err := vars.Delete("nomad/jobs/web", nil); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if v, _, err := vars.Peek("nomad/jobs/web", nil); err != nil || v != nil {
		t.Fatalf("Peek after delete = %+v, %v", v, err)
	}
}

// TestRootKeyring_NomadClient: the official client rotates and lists the
// variables' root keys.
func TestRootKeyring_NomadClient(t *testing.T) {
	_, base := newTestAgent(t)
	c, err := nomad.NewClient(&nomad.Config{Address: base})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Variables().Create(&nomad.Variable{Path: "a", Items: nomad.VariableItems{"k": "v"}}, nil); err != nil {
		t.Fatal(err)
	}
	key, _, err := c.Keyring().Rotate(nil, nil)
	if err != nil || key == nil || key.State != nomad.RootKeyStateActive {
		t.Fatalf("Rotate = %+v, %v", key, err)
	}
	keys, _, err := c.Keyring().List(nil)
	if err != nil || len(keys) != 2 || keys[1].KeyID != key.KeyID || keys[0].State != nomad.RootKeyStateInactive {
		t.Fatalf("List = %+v, %v", keys, err)
	}
	if _, _, err := c.Keyring().Rotate(&nomad.KeyringRotateOptions{Full: true}, nil); err == nil {
		t.Error("rotate -full was accepted")
	}
}
