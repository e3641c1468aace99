package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/structs"
)

// startServerAgents starts n server-only agents on free loopback ports,
// expecting a cluster of n, not yet joined; it returns their HTTP bases.
func startServerAgents(t *testing.T, n int) []string {
	t.Helper()
	var bases []string
	for i := range n {
		cfg := DefaultConfig()
		cfg.Name = fmt.Sprintf("srv-%d", i+1)
		cfg.BindAddr = "127.0.0.1"
		cfg.Ports = &PortsConfig{}
		cfg.DataDir = t.TempDir()
		cfg.LogLevel = "WARN"
		cfg.Server.Enabled = true
		cfg.Server.BootstrapExpect = n
		a, err := NewAgent(cfg, io.Discard)
		if err != nil {
			t.Fatalf("start agent %d: %v", i, err)
		}
		t.Cleanup(func() {
			if err := a.Shutdown(); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
		bases = append(bases, "http://"+a.HTTPAddr())
	}
	return bases
}

// clusterGet GETs url into out and returns the status.
func clusterGet(t *testing.T, url string, out any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return resp.StatusCode
}

// selfSerfAddr returns the serf address an agent's server gossips on, as
// its own member entry says.
func selfSerfAddr(t *testing.T, base string) string {
	t.Helper()
	var m structs.ServerMembersResponse
	if code := clusterGet(t, base+"/v1/agent/members", &m); code != http.StatusOK || len(m.Members) != 1 {
		t.Fatalf("members of a lone server: %d %+v", code, m)
	}
	return fmt.Sprintf("%s:%d", m.Members[0].Addr, m.Members[0].Port)
}

// TestClusterHTTP forms a three-server cluster of real agents through PUT
// /v1/agent/join, then reads the pool and the Raft configuration in
// Nomad's shapes and checks the error answers.
func TestClusterHTTP(t *testing.T) {
	bases := startServerAgents(t, 3)
	first := selfSerfAddr(t, bases[0])
	for _, b := range bases[1:] {
		code, body, _ := doJSON(t, http.MethodPut, b+"/v1/agent/join?address="+url.QueryEscape(first), "")
		if code != http.StatusOK || !strings.Contains(body, `"num_joined":1`) {
			t.Fatalf("join: %d %s", code, body)
		}
	}
	var leader string
	deadline := time.Now().Add(20 * time.Second)
	for {
		var peers []string
		clusterGet(t, bases[2]+"/v1/status/leader", &leader)
		clusterGet(t, bases[2]+"/v1/status/peers", &peers)
		if leader != "" && len(peers) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 3-server cluster: leader %q, peers %v", leader, peers)
		}
		time.Sleep(50 * time.Millisecond)
	}

	var members structs.ServerMembersResponse
	clusterGet(t, bases[1]+"/v1/agent/members", &members)
	if members.ServerName != "srv-2" || members.ServerRegion != "global" || members.ServerDC != "dc1" || len(members.Members) != 3 {
		t.Fatalf("members = %+v", members)
	}
	for _, m := range members.Members {
		if m.Status != "alive" || m.Port == 0 || m.Tags["role"] != "server" || m.Tags["rpc_addr"] == "" {
			t.Errorf("member %+v", m)
		}
	}

	var conf structs.RaftConfigurationResponse
	if code := clusterGet(t, bases[0]+"/v1/operator/raft/configuration", &conf); code != http.StatusOK {
		t.Fatalf("raft configuration: %d", code)
	}
	leaders := 0
	for _, s := range conf.Servers {
		if s.Leader {
			leaders++
			if s.Address != leader {
				t.Errorf("configuration's leader %s, /v1/status/leader %s", s.Address, leader)
			}
		}
		if !s.Voter || !strings.HasPrefix(s.Node, "srv-") {
			t.Errorf("raft server %+v", s)
		}
	}
	if len(conf.Servers) != 3 || leaders != 1 {
		t.Errorf("configuration = %+v", conf)
	}

	tests := []struct {
		method, path string
		wantCode     int
		wantBody     string
	}{
		{"PUT", "/v1/agent/join", 400, "address"},
		{"PUT", "/v1/agent/join?address=127.0.0.1:1", 502, "127.0.0.1:1"},
		{"PUT", "/v1/agent/force-leave", 400, "node"},
		{"PUT", "/v1/agent/force-leave?node=srv-2", 400, "alive"},
		{"PUT", "/v1/agent/force-leave?node=nope", 404, "no such server"},
		{"PUT", "/v1/agent/force-leave?node=srv-2&prune=maybe", 400, "prune"},
		{"DELETE", "/v1/operator/raft/peer", 400, "id"},
		{"DELETE", "/v1/operator/raft/peer?id=a&address=b", 400, "not both"},
		{"GET", "/v1/agent/join", 405, "method not allowed"},
	}
	for _, tt := range tests {
		code, body, _ := doJSON(t, tt.method, bases[0]+tt.path, "")
		if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
			t.Errorf("%s %s: got %d %q, want %d containing %q", tt.method, tt.path, code, body, tt.wantCode, tt.wantBody)
		}
	}
	// Every server answers 404 for an unknown peer: a follower forwards
	// the removal to the leader.
	for i, b := range bases {
		code, body, _ := doJSON(t, http.MethodDelete, b+"/v1/operator/raft/peer?id=no-such-peer", "")
		if code != http.StatusNotFound || !strings.Contains(body, "no peer with id no-such-peer") {
			t.Errorf("remove unknown peer on srv-%d: %d %q, want 404", i+1, code, body)
		}
	}
}

// TestClusterRoutesWithoutServer: an agent without a server says so.
func TestClusterRoutesWithoutServer(t *testing.T) {
	h := newHTTPAPI(noRoad{}, hclog.NewNullLogger())
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/agent/members"},
		{"PUT", "/v1/agent/join?address=127.0.0.1:4648"},
		{"PUT", "/v1/agent/force-leave?node=x"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(r.method, r.path, nil))
		if rec.Code != http.StatusNotImplemented || !strings.Contains(rec.Body.String(), "no server") {
			t.Errorf("%s %s: %d %q, want 501", r.method, r.path, rec.Code, rec.Body.String())
		}
	}
}
