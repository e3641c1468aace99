package command

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestNodeStatus(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
	}{
		{name: "list", args: nil, wantOut: []string{"Eligibility", "5e6f7a8b", "4 (1 unhealthy)"}},
		{name: "detail by prefix", args: []string{"5e6f"}, wantOut: []string{"held by 1a2b3c4d (train.train[0])", "free", "unhealthy"}},
		{name: "detail json", args: []string{"-json", "5e6f"}, wantOut: []string{`"Allocations": [`, `"NodeResources"`}},
		{name: "unknown", args: []string{"ffff"}, wantCode: 1, wantOut: []string{"Unexpected response code: 404"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, addr := newFakeAgent(t)
			f.on("GET /v1/nodes", []*structs.NodeListStub{testNode().Stub()})
			f.on("GET /v1/node/5e6f", testNode())
			f.on("GET /v1/node/"+nodeID+"/allocations", testAllocs())
			code, stdout, stderr := run(t, addr, append([]string{"node", "status"}, tt.args...)...)
			if code != tt.wantCode {
				t.Errorf("exit = %d, want %d; stderr %q", code, tt.wantCode, stderr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("output = %q, want it to contain %q", stdout+stderr, w)
				}
			}
		})
	}
}

func TestAllocStatus(t *testing.T) {
	f, addr := newFakeAgent(t)
	f.on("GET /v1/allocation/1a2b", testAllocs()[0])
	code, stdout, stderr := run(t, addr, "alloc", "status", "1a2b")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, w := range []string{`Task "main" is "running"`, "Task started by client", gpu0, "Placement Metrics"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout = %q, want it to contain %q", stdout, w)
		}
	}
}
