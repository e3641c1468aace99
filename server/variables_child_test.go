package server

import (
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestVariables_DispatchedChildReadsItsParents: a dispatched child's
// task reads its parent's variables (nomad/jobs/<parent>), as Nomad's
// workload identity names the parent for periodic and dispatched jobs,
// and not another job's.
func TestVariables_DispatchedChildReadsItsParents(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("n1", 0)
	registerNode(t, c, node)
	parent := paramJob("render", "optional", nil, nil)
	parent.TaskGroups[0].Tasks[0].Resources.Devices = nil
	registerJob(t, s, parent)
	var d structs.JobDispatchResponse
	call(t, s, structs.RPCJobDispatch, &structs.JobDispatchRequest{JobID: "render"}, &d)
	var alloc *structs.Allocation
	waitFor(t, 10*time.Second, func() (bool, string) {
		if as := liveAllocs(t, s, d.DispatchedJobID); len(as) == 1 {
			alloc = as[0]
			return true, ""
		}
		return false, "no allocation placed for the child"
	})
	putVar(t, s, "", "nomad/jobs/render", structs.VariableItems{"k": "parent"}, nil)
	putVar(t, s, "", "nomad/jobs/render/train", structs.VariableItems{"k": "group"}, nil)
	putVar(t, s, "", "nomad/jobs/other", structs.VariableItems{"k": "no"}, nil)
	ask := func(method, path string) (*structs.VariablesAllocResponse, error) {
		req := &structs.VariablesAllocRequest{NodeID: node.ID, NodeSecret: node.SecretID, AllocID: alloc.ID, Task: "t", Path: path}
		var resp structs.VariablesAllocResponse
		return &resp, c.Call(method, req, &resp)
	}
	resp, err := ask(structs.RPCVariablesAllocRead, "nomad/jobs/render")
	if err != nil || resp.Data == nil || resp.Data.Items["k"] != "parent" {
		t.Fatalf("child reads its parent's variable: %+v, %v", resp.Data, err)
	}
	resp, err = ask(structs.RPCVariablesAllocList, "nomad/jobs/")
	if err != nil || len(resp.List) != 2 || resp.List[1].Items["k"] != "group" {
		t.Errorf("child lists nomad/jobs/: %d variables, %v; want the parent's and its group's", len(resp.List), err)
	}
	if _, err := ask(structs.RPCVariablesAllocRead, "nomad/jobs/other"); err == nil {
		t.Error("child reads another job's variable: want refused")
	}
}

// TestVariables_SlashedIDNotAChildReadsNothing: a job registered by hand
// as "web/train" (with ParentID "web") is no child of web: its task may
// not read nomad/jobs/web/train, which is web's group train's variable.
func TestVariables_SlashedIDNotAChildReadsNothing(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("n1", 0)
	registerNode(t, c, node)
	job := gpuJob("web/train", structs.JobTypeBatch, 1, 0)
	job.ParentID = "web"
	job.TaskGroups[0].Tasks[0].Resources.Devices = nil
	registerJob(t, s, job)
	var alloc *structs.Allocation
	waitFor(t, 10*time.Second, func() (bool, string) {
		if as := liveAllocs(t, s, "web/train"); len(as) == 1 {
			alloc = as[0]
			return true, ""
		}
		return false, "no allocation placed"
	})
	putVar(t, s, "", "nomad/jobs/web/train", structs.VariableItems{"k": "web's group"}, nil)
	for _, method := range []string{structs.RPCVariablesAllocRead, structs.RPCVariablesAllocList} {
		req := &structs.VariablesAllocRequest{NodeID: node.ID, NodeSecret: node.SecretID, AllocID: alloc.ID, Task: "t", Path: "nomad/jobs/web/train"}
		var resp structs.VariablesAllocResponse
		if err := c.Call(method, req, &resp); err == nil || !strings.Contains(err.Error(), "not a periodic or dispatched child") {
			t.Errorf("%s by job web/train: %v (%+v %d), want permission denied", method, err, resp.Data, len(resp.List))
		}
	}
}
