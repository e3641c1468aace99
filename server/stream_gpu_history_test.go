package server

import (
	"testing"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
)

// TestAllowGPUHistory: a node's GPU history needs node:read, an
// allocation's read-job in its namespace, like the stats they extend.
func TestAllowGPUHistory(t *testing.T) {
	policy := func(rules string) *acl.ACL {
		t.Helper()
		p, err := acl.Parse("p.hcl", rules)
		if err != nil {
			t.Fatal(err)
		}
		return acl.New(false, []*acl.Policy{p})
	}
	nodeRead := policy(`node { policy = "read" }`)
	nsRead := policy(`namespace "team" { policy = "read" }`)
	tests := []struct {
		name   string
		a      *acl.ACL
		method string
		ns     string
		want   bool
	}{
		{"node history, node:read", nodeRead, structs.RPCClientNodeGPUHistory, "", true},
		{"node history, namespace read only", nsRead, structs.RPCClientNodeGPUHistory, "", false},
		{"alloc history, read in its namespace", nsRead, structs.RPCClientAllocGPUHistory, "team", true},
		{"alloc history, read elsewhere", nsRead, structs.RPCClientAllocGPUHistory, "default", false},
		{"alloc history, node:read only", nodeRead, structs.RPCClientAllocGPUHistory, "team", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := allowClientOp(tt.a, tt.method, tt.ns); got != tt.want {
				t.Errorf("allowClientOp: got %v, want %v", got, tt.want)
			}
		})
	}
	for _, m := range []string{structs.RPCClientNodeGPUHistory, structs.RPCClientAllocGPUHistory} {
		if !clientOps[m] {
			t.Errorf("%s is not routed to clients", m)
		}
	}
}
