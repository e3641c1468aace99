package schedtest

import (
	"github.com/droverhq/drover/structs"
)

// UpsertNode writes node to state.
func (h *Harness) UpsertNode(node *structs.Node) {
	h.t.Helper()
	if err := h.State.UpsertNode(h.NextIndex(), node); err != nil {
		h.t.Fatalf("upsert node %s: %v", node.Name, err)
	}
}

// UpsertJob writes a copy of job to state and returns what was stored.
func (h *Harness) UpsertJob(job *structs.Job) *structs.Job {
	h.t.Helper()
	if err := h.State.UpsertJob(h.NextIndex(), job.Copy()); err != nil {
		h.t.Fatalf("upsert job %s: %v", job.ID, err)
	}
	return h.Job(job.Namespace, job.ID)
}

// Job returns the job in state, failing the test if it is absent.
func (h *Harness) Job(namespace, id string) *structs.Job {
	h.t.Helper()
	j, err := h.State.JobByID(nil, namespace, id)
	if err != nil || j == nil {
		h.t.Fatalf("read job %s: %v (found %v)", id, err, j != nil)
	}
	return j
}

// RegisterJob writes job and a pending job-register evaluation for it, and
// returns the evaluation, as the server's Job.Register does.
func (h *Harness) RegisterJob(job *structs.Job) *structs.Evaluation {
	h.t.Helper()
	stored := h.UpsertJob(job)
	return h.NewEval(stored, structs.EvalTriggerJobRegister)
}

// StopJob marks the job stopped and returns a pending deregister
// evaluation.
func (h *Harness) StopJob(namespace, id string) *structs.Evaluation {
	h.t.Helper()
	job := h.Job(namespace, id).Copy()
	job.Stop = true
	stored := h.UpsertJob(job)
	return h.NewEval(stored, structs.EvalTriggerJobDeregister)
}

// NewEval writes and returns a pending evaluation of job.
func (h *Harness) NewEval(job *structs.Job, trigger string) *structs.Evaluation {
	h.t.Helper()
	eval := Eval(job, trigger)
	eval.CreateTime = h.Now().UnixNano()
	eval.ModifyTime = eval.CreateTime
	if err := h.State.UpsertEvals(h.NextIndex(), []*structs.Evaluation{eval}); err != nil {
		h.t.Fatalf("upsert eval: %v", err)
	}
	return h.Eval(eval.ID)
}

// Eval returns the evaluation in state, failing the test if it is absent.
func (h *Harness) Eval(id string) *structs.Evaluation {
	h.t.Helper()
	e, err := h.State.EvalByID(nil, id)
	if err != nil || e == nil {
		h.t.Fatalf("read eval %s: %v (found %v)", id, err, e != nil)
	}
	return e
}

// SetNodeStatus sets a node's status ("ready", "down").
func (h *Harness) SetNodeStatus(nodeID, status string) {
	h.t.Helper()
	if err := h.State.UpdateNodeStatus(h.NextIndex(), nodeID, status, h.Now().UnixNano()); err != nil {
		h.t.Fatalf("update node %s: %v", nodeID, err)
	}
}

// SetClientStatus reports a client status for an allocation, as its
// client would, stamped with the harness clock as the servers stamp it.
func (h *Harness) SetClientStatus(allocID, status string) {
	h.t.Helper()
	a, err := h.State.AllocByID(nil, allocID)
	if err != nil || a == nil {
		h.t.Fatalf("read alloc %s: %v (found %v)", allocID, err, a != nil)
	}
	update := &structs.Allocation{ID: a.ID, NodeID: a.NodeID, JobID: a.JobID, Namespace: a.Namespace, ClientStatus: status,
		ModifyTime: h.Now().UnixNano()}
	if err := h.State.UpdateAllocsFromClient(h.NextIndex(), []*structs.Allocation{update}); err != nil {
		h.t.Fatalf("update alloc %s: %v", allocID, err)
	}
}

// Allocs returns every allocation of the job, terminal ones included.
func (h *Harness) Allocs(namespace, jobID string) []*structs.Allocation {
	h.t.Helper()
	allocs, err := h.State.AllocsByJob(nil, namespace, jobID)
	if err != nil {
		h.t.Fatalf("read allocs of %s: %v", jobID, err)
	}
	return allocs
}

// LiveAllocs returns the job's allocations that are meant to run and have
// not finished.
func (h *Harness) LiveAllocs(namespace, jobID string) []*structs.Allocation {
	h.t.Helper()
	var out []*structs.Allocation
	for _, a := range h.Allocs(namespace, jobID) {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out
}
