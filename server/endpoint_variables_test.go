package server

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

func putVar(t *testing.T, s *Server, token, path string, items structs.VariableItems, cas *uint64) *structs.VariablesUpsertResponse {
	t.Helper()
	req := &structs.VariablesUpsertRequest{Var: &structs.VariableDecrypted{
		VariableMetadata: structs.VariableMetadata{Path: path}, Items: items}, CheckIndex: cas}
	req.AuthToken = token
	var resp structs.VariablesUpsertResponse
	call(t, s, structs.RPCVariablesUpsert, req, &resp)
	return &resp
}

func readVar(s *Server, token, path string, stale bool) (*structs.VariableDecrypted, error) {
	req := &structs.VariablesReadRequest{Path: path}
	req.AuthToken, req.AllowStale = token, stale
	var resp structs.VariablesReadResponse
	err := s.RPC(structs.RPCVariablesRead, req, &resp)
	return resp.Data, err
}

func TestVariables_CRUDAndCheckAndSet(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	out := putVar(t, s, "", "nomad/jobs/web", structs.VariableItems{"db_pass": "s3cret"}, nil).Output
	if out == nil || out.ModifyIndex == 0 || out.CreateTime == 0 || out.Namespace != "default" {
		t.Fatalf("upsert output = %+v", out)
	}
	got, err := readVar(s, "", "nomad/jobs/web", false)
	if err != nil || got == nil || got.Items["db_pass"] != "s3cret" || got.ModifyIndex != out.ModifyIndex {
		t.Fatalf("read = %+v, %v", got, err)
	}

	// cas=0 on an existing variable loses and answers the current one.
	lost := putVar(t, s, "", "nomad/jobs/web", structs.VariableItems{"db_pass": "other"}, ptr[uint64](0))
	if lost.Conflict == nil || lost.Output != nil || lost.Conflict.ModifyIndex != out.ModifyIndex || lost.Conflict.Items["db_pass"] != "s3cret" {
		t.Fatalf("cas=0 conflict = %+v output = %+v", lost.Conflict, lost.Output)
	}
	won := putVar(t, s, "", "nomad/jobs/web", structs.VariableItems{"db_pass": "n3w"}, ptr(out.ModifyIndex))
	if won.Conflict != nil || won.Output == nil || won.Output.CreateIndex != out.CreateIndex || won.Output.ModifyIndex <= out.ModifyIndex {
		t.Fatalf("cas with the right index = %+v / %+v", won.Output, won.Conflict)
	}
	putVar(t, s, "", "app/one", structs.VariableItems{"k": "v"}, nil)

	list := &structs.VariablesListRequest{}
	list.Prefix = "nomad/"
	var lresp structs.VariablesListResponse
	call(t, s, structs.RPCVariablesList, list, &lresp)
	if len(lresp.Data) != 1 || lresp.Data[0].Path != "nomad/jobs/web" {
		t.Fatalf("list nomad/ = %+v", lresp.Data)
	}

	del := &structs.VariablesDeleteRequest{Path: "nomad/jobs/web", CheckIndex: ptr(out.ModifyIndex)}
	var dresp structs.VariablesDeleteResponse
	call(t, s, structs.RPCVariablesDelete, del, &dresp)
	if dresp.Conflict == nil || dresp.Conflict.ModifyIndex != won.Output.ModifyIndex {
		t.Fatalf("delete with a stale index: conflict = %+v", dresp.Conflict)
	}
	del.CheckIndex = ptr(won.Output.ModifyIndex)
	dresp = structs.VariablesDeleteResponse{}
	call(t, s, structs.RPCVariablesDelete, del, &dresp)
	if dresp.Conflict != nil {
		t.Fatalf("delete: conflict %+v", dresp.Conflict)
	}
	if got, err := readVar(s, "", "nomad/jobs/web", false); got != nil || err != nil {
		t.Fatalf("read after delete = %+v, %v", got, err)
	}
}

func TestVariables_Refused(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	big := make([]byte, 70<<10)
	for i := range big {
		big[i] = 'x'
	}
	tests := []struct {
		name  string
		path  string
		items structs.VariableItems
		want  error
	}{
		{"leading slash", "/a", structs.VariableItems{"k": "v"}, structs.ErrInvalid},
		{"dot dot", "a/../b", structs.VariableItems{"k": "v"}, structs.ErrInvalid},
		{"reserved prefix", "nomad/other", structs.VariableItems{"k": "v"}, structs.ErrInvalid},
		{"no items", "a", nil, structs.ErrInvalid},
		{"over 64 KiB", "a", structs.VariableItems{"k": string(big)}, structs.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &structs.VariablesUpsertRequest{Var: &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: tt.path}, Items: tt.items}}
			err := s.RPC(structs.RPCVariablesUpsert, req, &structs.VariablesUpsertResponse{})
			if !errors.Is(err, tt.want) {
				t.Errorf("upsert = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestVariables_NoPlaintextAtRest writes a distinctive secret and checks
// that neither the Raft log (raft.db) nor a snapshot holds it, while they
// do hold the path (the metadata is in the clear): the check would see
// the secret if it were there. The key file is private.
func TestVariables_NoPlaintextAtRest(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	s := startServer(t, cfg)
	const secret = "Zq7-unmistakable-secret-4411"
	putVar(t, s, "", "nomad/jobs/secretive-job", structs.VariableItems{"token": secret}, nil)
	if err := s.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	var files []string
	_ = filepath.Walk(filepath.Join(cfg.DataDir, "raft"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	sawPath := map[string]bool{}
	for _, f := range files {
		buf, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(buf, []byte(secret)) {
			t.Errorf("%s holds the secret in the clear", f)
		}
		sawPath[filepath.Base(f)] = sawPath[filepath.Base(f)] || bytes.Contains(buf, []byte("nomad/jobs/secretive-job"))
	}
	if !sawPath["raft.db"] || !sawPath["state.bin"] {
		t.Fatalf("the path was not found in raft.db and a snapshot (%v in %v): the check sees nothing", sawPath, files)
	}
	keys, _ := filepath.Glob(filepath.Join(cfg.DataDir, "keystore", "*.json"))
	if len(keys) != 1 {
		t.Fatalf("keystore files = %v, want 1", keys)
	}
	if fi, err := os.Stat(keys[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	// After a restart the key is loaded from the keystore.
	ks, err := openKeystore(filepath.Join(cfg.DataDir, "keystore"))
	if err != nil || len(ks.keys) != 1 {
		t.Fatalf("reopen keystore: %v (%d keys)", err, len(ks.keys))
	}
}

func TestVariables_ACLPathRules(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	putVar(t, s, mgmt, "app/db", structs.VariableItems{"pass": "p1"}, nil)
	putVar(t, s, mgmt, "app/secret/root", structs.VariableItems{"pass": "p2"}, nil)
	putVar(t, s, mgmt, "other/x", structs.VariableItems{"pass": "p3"}, nil)
	tok := clientToken(t, s, mgmt, "app-reader", `namespace "default" {
  variables {
    path "app/*" { capabilities = ["read", "list"] }
    path "app/secret/*" { capabilities = ["deny"] }
  }
}`).SecretID

	if v, err := readVar(s, tok, "app/db", false); err != nil || v.Items["pass"] != "p1" {
		t.Errorf("read app/db = %+v, %v; want allowed", v, err)
	}
	for _, p := range []string{"app/secret/root", "other/x"} {
		if _, err := readVar(s, tok, p, false); !isDenied(err) {
			t.Errorf("read %s = %v, want permission denied", p, err)
		}
	}
	req := &structs.VariablesUpsertRequest{Var: &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: "app/db"}, Items: structs.VariableItems{"a": "b"}}}
	req.AuthToken = tok
	if err := s.RPC(structs.RPCVariablesUpsert, req, &structs.VariablesUpsertResponse{}); !isDenied(err) {
		t.Errorf("write app/db = %v, want permission denied", err)
	}
	del := &structs.VariablesDeleteRequest{Path: "app/db"}
	del.AuthToken = tok
	if err := s.RPC(structs.RPCVariablesDelete, del, &structs.VariablesDeleteResponse{}); !isDenied(err) {
		t.Errorf("delete app/db = %v, want permission denied", err)
	}
	list := &structs.VariablesListRequest{}
	list.AuthToken, list.Namespace = tok, "*"
	var lresp structs.VariablesListResponse
	call(t, s, structs.RPCVariablesList, list, &lresp)
	if len(lresp.Data) != 1 || lresp.Data[0].Path != "app/db" {
		t.Errorf("list = %+v, want only app/db", lresp.Data)
	}
}

// TestVariables_AllocRead: a node reads for an allocation it runs, only
// the paths of the allocation's job, group and task.
func TestVariables_AllocRead(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("n1", 0)
	registerNode(t, c, node)
	job := gpuJob("web", structs.JobTypeService, 1, 0)
	job.TaskGroups[0].Tasks[0].Resources.Devices = nil
	registerJob(t, s, job)
	var alloc *structs.Allocation
	waitFor(t, 10*time.Second, func() (bool, string) {
		if as := liveAllocs(t, s, "web"); len(as) == 1 {
			alloc = as[0]
			return true, ""
		}
		return false, "no allocation placed"
	})
	putVar(t, s, "", "nomad/jobs/web", structs.VariableItems{"db_pass": "s3cret"}, nil)
	putVar(t, s, "", "nomad/jobs/other", structs.VariableItems{"db_pass": "nope"}, nil)
	ask := func(path, secret, task string) (*structs.VariablesAllocResponse, error) {
		req := &structs.VariablesAllocRequest{NodeID: node.ID, NodeSecret: secret, AllocID: alloc.ID, Task: task, Path: path}
		var resp structs.VariablesAllocResponse
		err := c.Call(structs.RPCVariablesAllocRead, req, &resp)
		return &resp, err
	}
	resp, err := ask("nomad/jobs/web", node.SecretID, "t")
	if err != nil || resp.Data == nil || resp.Data.Items["db_pass"] != "s3cret" {
		t.Fatalf("read own job's variable = %+v, %v", resp.Data, err)
	}
	putVar(t, s, "", "nomad/jobs/web/train", structs.VariableItems{"g": "1"}, nil)
	putVar(t, s, "", "nomad/jobs/web/train/other-task", structs.VariableItems{"x": "no"}, nil)
	lreq := &structs.VariablesAllocRequest{NodeID: node.ID, NodeSecret: node.SecretID, AllocID: alloc.ID, Task: "t", Path: "nomad/jobs/"}
	var lresp structs.VariablesAllocResponse
	if err := c.Call(structs.RPCVariablesAllocList, lreq, &lresp); err != nil {
		t.Fatalf("AllocList: %v", err)
	}
	var listed []string
	for _, v := range lresp.List {
		listed = append(listed, v.Path)
	}
	if strings.Join(listed, ",") != "nomad/jobs/web,nomad/jobs/web/train" || lresp.List[0].Items["db_pass"] != "s3cret" {
		t.Errorf("AllocList nomad/jobs/ = %v, want the job's and the group's variables only", listed)
	}
	if _, err := ask("nomad/jobs/other", node.SecretID, "t"); err == nil || !bytes.Contains([]byte(err.Error()), []byte("may read only")) {
		t.Errorf("read another job's variable: %v, want refused", err)
	}
	if _, err := ask("nomad/jobs/web/train/other", node.SecretID, "other"); err == nil {
		t.Errorf("read for a task the allocation does not have: want refused")
	}
	if _, err := ask("nomad/jobs/web", "wrong-secret", "t"); err == nil {
		t.Errorf("read with a wrong node secret: want refused")
	}
	// RootKey.Get in process (what an agent's HTTP API could reach) is
	// refused: only a server's connection marks it.
	err = s.RPC(structs.RPCRootKeyGet, &structs.RootKeyGetRequest{KeyID: "x"}, &structs.RootKeyGetResponse{})
	if !isDenied(err) {
		t.Errorf("RootKey.Get in process = %v, want permission denied", err)
	}
}

// TestVariables_RotateRootKey: after a rotation new variables are sealed
// with the new key, older ones stay readable with theirs; only a
// management token may rotate or list.
func TestVariables_RotateRootKey(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	putVar(t, s, mgmt, "app/old", structs.VariableItems{"k": "before"}, nil)
	first, _ := s.State().ActiveRootKeyMeta(nil)

	rot := &structs.RootKeyRotateRequest{}
	rot.AuthToken = mgmt
	var rresp structs.RootKeyRotateResponse
	call(t, s, structs.RPCRootKeyRotate, rot, &rresp)
	if rresp.Key == nil || rresp.Key.KeyID == first.KeyID || rresp.Key.State != structs.RootKeyStateActive {
		t.Fatalf("rotate = %+v (first key %s)", rresp.Key, first.KeyID)
	}
	putVar(t, s, mgmt, "app/new", structs.VariableItems{"k": "after"}, nil)
	oldSealed, _ := s.State().VariableByPath(nil, "default", "app/old")
	newSealed, _ := s.State().VariableByPath(nil, "default", "app/new")
	if oldSealed.KeyID != first.KeyID || newSealed.KeyID != rresp.Key.KeyID {
		t.Errorf("keys: old variable %s (want %s), new %s (want %s)", oldSealed.KeyID, first.KeyID, newSealed.KeyID, rresp.Key.KeyID)
	}
	for path, want := range map[string]string{"app/old": "before", "app/new": "after"} {
		if v, err := readVar(s, mgmt, path, false); err != nil || v.Items["k"] != want {
			t.Errorf("read %s = %+v, %v", path, v, err)
		}
	}
	list := &structs.RootKeyListRequest{}
	list.AuthToken = mgmt
	var lresp structs.RootKeyListResponse
	call(t, s, structs.RPCRootKeyList, list, &lresp)
	if len(lresp.Keys) != 2 || lresp.Keys[0].State != structs.RootKeyStateInactive || lresp.Keys[1].State != structs.RootKeyStateActive {
		t.Errorf("keys = %+v, want the first inactive and the new one active", lresp.Keys)
	}

	tok := clientToken(t, s, mgmt, "ops", `operator { policy = "write" }`).SecretID
	rot.AuthToken = tok
	if err := s.RPC(structs.RPCRootKeyRotate, rot, &structs.RootKeyRotateResponse{}); !isDenied(err) {
		t.Errorf("rotate with a non-management token = %v, want denied", err)
	}
	rot.AuthToken, rot.Full = mgmt, true
	if err := s.RPC(structs.RPCRootKeyRotate, rot, &structs.RootKeyRotateResponse{}); !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("rotate -full = %v, want refused", err)
	}
}
