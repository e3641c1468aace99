package e2e

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"
)

// aclParity is the state the ACL calls share.
type aclParity struct {
	c       *nomad.Client
	mgmt    string
	limited *nomad.ACLToken
}

// TestE2E_NomadClientParityACL drives an agent with ACLs on through the
// official Nomad client's ACL calls, then checks that what a limited
// token sees through the other calls (search among them) is filtered.
// Like TestE2E_NomadClientParity, a table of named calls to append to.
func TestE2E_NomadClientParityACL(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	cfg := agentConfig(t, dir, "acl-parity", ports, 1)
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("acl {\n  enabled = true\n}\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	a := launchAgent(t, ports[0], "-config", cfg)
	waitFor(t, 30*time.Second, "a leader", func() bool { return leaderOf(a) != "" })
	c, err := nomad.NewClient(&nomad.Config{Address: a.addr})
	if err != nil {
		t.Fatal(err)
	}
	p := &aclParity{c: c}

	calls := []struct {
		name string
		fn   func(t *testing.T, p *aclParity)
	}{
		{"ACLTokens.Bootstrap", func(t *testing.T, p *aclParity) {
			tok, _, err := p.c.ACLTokens().Bootstrap(nil)
			if err != nil {
				t.Fatal(err)
			}
			if tok.Type != "management" || tok.SecretID == "" || tok.AccessorID == "" {
				t.Fatalf("got %+v, want a management token", tok)
			}
			p.mgmt = tok.SecretID
			p.c.SetSecretID(p.mgmt)
		}},
		{"ACLPolicies.Upsert", func(t *testing.T, p *aclParity) {
			pol := &nomad.ACLPolicy{Name: "readers", Description: "read default", Rules: `namespace "default" { policy = "read" }`}
			if _, err := p.c.ACLPolicies().Upsert(pol, nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"ACLPolicies.List", func(t *testing.T, p *aclParity) {
			list, _, err := p.c.ACLPolicies().List(nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].Name != "readers" || list[0].Description != "read default" {
				t.Errorf("got %+v, want readers", list)
			}
		}},
		{"ACLPolicies.Info", func(t *testing.T, p *aclParity) {
			pol, _, err := p.c.ACLPolicies().Info("readers", nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(pol.Rules, `policy = "read"`) {
				t.Errorf("got %+v, want its rules", pol)
			}
		}},
		{"ACLTokens.Create", func(t *testing.T, p *aclParity) {
			tok, _, err := p.c.ACLTokens().Create(&nomad.ACLToken{Name: "reader", Type: "client", Policies: []string{"readers"}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tok.SecretID == "" || !slices.Equal(tok.Policies, []string{"readers"}) {
				t.Fatalf("got %+v, want a client token with readers", tok)
			}
			p.limited = tok
		}},
		{"ACLTokens.Info", func(t *testing.T, p *aclParity) {
			tok, _, err := p.c.ACLTokens().Info(p.limited.AccessorID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tok.Name != "reader" || tok.Type != "client" {
				t.Errorf("got %+v, want reader", tok)
			}
		}},
		{"ACLTokens.List", func(t *testing.T, p *aclParity) {
			list, _, err := p.c.ACLTokens().List(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(list, func(s *nomad.ACLTokenListStub) bool { return s.AccessorID == p.limited.AccessorID }) {
				t.Errorf("got %+v, want the reader token among them", list)
			}
		}},
		{"ACLTokens.Self with a limited token", func(t *testing.T, p *aclParity) {
			tok, _, err := p.c.ACLTokens().Self(&nomad.QueryOptions{AuthToken: p.limited.SecretID})
			if err != nil {
				t.Fatal(err)
			}
			if tok.AccessorID != p.limited.AccessorID {
				t.Errorf("got %+v, want the reader token", tok)
			}
		}},
		{"Search.PrefixSearch is filtered", func(t *testing.T, p *aclParity) {
			job := parityJob("acl-job", 0)
			if _, _, err := p.c.Jobs().Register(job, nil); err != nil {
				t.Fatal(err)
			}
			resp, _, err := p.c.Search().PrefixSearch("acl", contexts.All, &nomad.QueryOptions{AuthToken: p.limited.SecretID})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(resp.Matches[contexts.Jobs], []string{"acl-job"}) {
				t.Errorf("jobs: got %v, want acl-job", resp.Matches)
			}
			if _, ok := resp.Matches[contexts.Nodes]; ok {
				t.Errorf("nodes searched for a token without node read: %v", resp.Matches)
			}
			if _, _, err := p.c.Search().PrefixSearch("", contexts.Nodes, &nomad.QueryOptions{AuthToken: p.limited.SecretID}); err == nil || !strings.Contains(err.Error(), "403") {
				t.Errorf("nodes context: %v, want a 403", err)
			}
		}},
		{"Jobs.List refused without a token", func(t *testing.T, p *aclParity) {
			if _, _, err := p.c.Jobs().List(&nomad.QueryOptions{AuthToken: "00000000-0000-0000-0000-000000000000"}); err == nil || !strings.Contains(err.Error(), "403") {
				t.Errorf("got %v, want a 403", err)
			}
		}},
		{"Nodes.ToggleEligibility needs node write", func(t *testing.T, p *aclParity) {
			var nodes []*nomad.NodeListStub
			waitFor(t, 30*time.Second, "the node", func() bool {
				nodes, _, _ = p.c.Nodes().List(nil)
				return len(nodes) == 1
			})
			limited := &nomad.WriteOptions{AuthToken: p.limited.SecretID}
			if _, err := p.c.Nodes().ToggleEligibility(nodes[0].ID, false, limited); err == nil || !strings.Contains(err.Error(), "403") {
				t.Errorf("with a namespace reader: %v, want a 403", err)
			}
			if _, err := p.c.Nodes().ToggleEligibility(nodes[0].ID, true, nil); err != nil {
				t.Errorf("with the management token: %v", err)
			}
		}},
		{"Variables.Create needs variable write", func(t *testing.T, p *aclParity) {
			v := &nomad.Variable{Path: "acl/secret", Items: nomad.VariableItems{"k": "v"}}
			if _, _, err := p.c.Variables().Create(v, &nomad.WriteOptions{AuthToken: p.limited.SecretID}); err == nil || !strings.Contains(err.Error(), "403") {
				t.Errorf("with a namespace reader: %v, want a 403", err)
			}
			if _, _, err := p.c.Variables().Create(v, nil); err != nil {
				t.Errorf("with the management token: %v", err)
			}
		}},
		{"Deployments.List is filtered by namespace", func(t *testing.T, p *aclParity) {
			if _, _, err := p.c.Deployments().List(&nomad.QueryOptions{AuthToken: p.limited.SecretID}); err != nil {
				t.Errorf("with a namespace reader: %v", err)
			}
			if _, _, err := p.c.Deployments().List(&nomad.QueryOptions{AuthToken: p.limited.SecretID, Namespace: "other"}); err == nil || !strings.Contains(err.Error(), "403") {
				t.Errorf("another namespace: %v, want a 403", err)
			}
		}},
		{"ACLTokens.Delete", func(t *testing.T, p *aclParity) {
			if _, err := p.c.ACLTokens().Delete(p.limited.AccessorID, nil); err != nil {
				t.Fatal(err)
			}
			if _, _, err := p.c.ACLTokens().Info(p.limited.AccessorID, nil); err == nil {
				t.Error("the token is still there")
			}
		}},
	}
	passed := 0
	for _, call := range calls {
		if t.Run(call.name, func(t *testing.T) { call.fn(t, p) }) {
			passed++
		}
	}
	t.Logf("Nomad client parity with ACLs: %d of %d calls pass", passed, len(calls))
}
