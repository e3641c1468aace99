package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// nodeGPUHealth returns each GPU instance's health and description as
// /v1/node/<id> reports them.
func (a *agentProc) nodeGPUHealth(nodeID string) map[string][2]string {
	var node struct {
		NodeResources struct {
			Devices []struct {
				Instances []struct {
					ID                string
					Healthy           bool
					HealthDescription string
				}
			}
		}
	}
	if code := a.getJSON("/v1/node/"+nodeID, &node); code != 200 {
		a.t.Fatalf("GET node %s: status %d", nodeID, code)
	}
	out := map[string][2]string{}
	for _, d := range node.NodeResources.Devices {
		for _, inst := range d.Instances {
			out[inst.ID] = [2]string{fmt.Sprint(inst.Healthy), inst.HealthDescription}
		}
	}
	return out
}

// TestE2E_GPUHealth fails the simulated GPU a sleeping job holds through
// the agent's health endpoint: the allocation is stopped with the reason
// and replaced on the node's other, healthy GPU. Recovering the GPU shows
// it healthy on the node again.
func TestE2E_GPUHealth(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-h", ports, 2))

	if code, body := a.do("PUT", "/v1/client/gpu/GPU-nope/health", `{"Healthy": false}`); code != 404 {
		t.Errorf("PUT health of an unknown GPU: got %d %q, want 404", code, body)
	}

	job := writeFile(t, dir, "sick.hcl", gpuJob("sick", 1, "sleep 600"))
	if r := a.drover("job", "run", "-detach", job); r.code != 0 {
		t.Fatalf("job run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	orig := a.waitAlloc("sick", "running")
	if len(orig.gpus()) != 1 {
		t.Fatalf("allocation GPUs: got %v, want 1", orig.gpus())
	}
	bad := orig.gpus()[0]

	body := `{"Healthy": false, "Reason": "XID 79 (simulated)"}`
	if code, resp := a.do("PUT", "/v1/client/gpu/"+bad+"/health", body); code != 200 {
		t.Fatalf("PUT health: got %d %q, want 200", code, resp)
	}
	if got := a.nodeGPUHealth(orig.NodeID)[bad]; got != [2]string{"false", "XID 79 (simulated)"} {
		t.Errorf("node reports GPU %s as %v, want unhealthy with the reason", bad, got)
	}

	var repl allocStub
	waitFor(t, 30*time.Second, "original stopped and a replacement running on another GPU", func() bool {
		stopped := false
		for _, al := range a.jobAllocs("sick") {
			switch {
			case al.ID == orig.ID:
				stopped = al.DesiredStatus == "stop" && al.ClientStatus != "running" && al.ClientStatus != "pending"
			case al.ClientStatus == "running":
				repl = al
			}
		}
		return stopped && repl.ID != ""
	})
	if got := repl.gpus(); len(got) != 1 || got[0] == bad || !slices.Contains(a.nodeGPUs(orig.NodeID), got[0]) {
		t.Errorf("replacement GPUs: got %v, want the node's other GPU (not %s)", got, bad)
	}
	var stopped struct{ DesiredDescription string }
	if code := a.getJSON("/v1/allocation/"+orig.ID, &stopped); code != 200 {
		t.Fatalf("GET allocation %s: status %d", orig.ID, code)
	}
	if want := "GPU " + bad + " unhealthy: XID 79 (simulated)"; stopped.DesiredDescription != want {
		t.Errorf("original's description: got %q, want %q", stopped.DesiredDescription, want)
	}

	if code, resp := a.do("PUT", "/v1/client/gpu/"+bad+"/health", `{"Healthy": true}`); code != 200 {
		t.Fatalf("PUT health (recover): got %d %q, want 200", code, resp)
	}
	if got := a.nodeGPUHealth(orig.NodeID)[bad]; got != [2]string{"true", "simulated"} {
		t.Errorf("node reports recovered GPU %s as %v, want healthy", bad, got)
	}
	if live := a.jobAllocs("sick"); len(live) != 2 {
		t.Errorf("allocations after recovery: got %d, want the original and its one replacement", len(live))
	}
}
