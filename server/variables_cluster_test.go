package server

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestVariables_KeyReplicatedToFollowers: the leader generates the root
// key on the first write; every follower fetches it over RPC into its
// own keystore (0600) and serves decrypted stale reads; after the leader
// dies the new one still decrypts and writes.
func TestVariables_KeyReplicatedToFollowers(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.Leader()
	putVar(t, leader, "", "nomad/jobs/web", structs.VariableItems{"db_pass": "s3cret"}, nil)
	meta, err := leader.State().ActiveRootKeyMeta(nil)
	if err != nil || meta == nil {
		t.Fatalf("active key = %v, %v", meta, err)
	}
	for i := range 3 {
		s := c.Server(i)
		if s == leader {
			continue
		}
		waitFor(t, 10*time.Second, func() (bool, string) {
			ks, err := s.keystore()
			return err == nil && ks.get(meta.KeyID) != nil, "follower never fetched the root key"
		})
		file := filepath.Join(c.configs[i].DataDir, "keystore", meta.KeyID+".json")
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("follower key file: %v %v", fi, err)
		}
		waitFor(t, 10*time.Second, func() (bool, string) {
			v, err := readVar(s, "", "nomad/jobs/web", true)
			return err == nil && v != nil && v.Items["db_pass"] == "s3cret", "follower stale read not decrypted"
		})
	}
	// A rotation reaches every follower's keystore too.
	rot := &structs.RootKeyRotateRequest{}
	var rresp structs.RootKeyRotateResponse
	call(t, leader, structs.RPCRootKeyRotate, rot, &rresp)
	for i := range 3 {
		s := c.Server(i)
		waitFor(t, 10*time.Second, func() (bool, string) {
			ks, err := s.keystore()
			return err == nil && ks.get(rresp.Key.KeyID) != nil, "a server never fetched the rotated key"
		})
	}
	old := c.Index(leader)
	if err := c.shutdown(old, leader); err != nil {
		t.Fatal(err)
	}
	c.servers[old] = nil
	var next *Server
	waitFor(t, 20*time.Second, func() (bool, string) {
		for i := range 3 {
			if s := c.Server(i); s != nil && s.IsLeader() && s.leaderReady.Load() {
				next = s
				return true, ""
			}
		}
		return false, "no new leader"
	})
	if v, err := readVar(next, "", "nomad/jobs/web", false); err != nil || v == nil || v.Items["db_pass"] != "s3cret" {
		t.Fatalf("new leader read = %+v, %v", v, err)
	}
	putVar(t, next, "", "nomad/jobs/web", structs.VariableItems{"db_pass": "after"}, nil)
}
