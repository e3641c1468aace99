package server

import (
	"maps"
	"time"

	"github.com/droverhq/drover/structs"
)

// nodeReadyEvals returns the evaluations for a node that joined, became
// ready again or changed what constraints see: one per job with live
// allocations on it (nodeEvals), and one per other system or sysbatch job
// that is not stopped, so that those place an allocation on it (or stop
// theirs where the node no longer matches).
func (s *Server) nodeReadyEvals(nodeID string) ([]*structs.Evaluation, error) {
	evals, err := s.nodeEvals(nodeID)
	if err != nil {
		return nil, err
	}
	covered := make(map[[2]string]bool, len(evals))
	for _, e := range evals {
		covered[[2]string{e.Namespace, e.JobID}] = true
	}
	jobs, err := s.State().Jobs(nil, "*")
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixNano()
	for _, job := range jobs {
		if !runsOnEveryNode(job) || job.Stop || covered[[2]string{job.Namespace, job.ID}] {
			continue
		}
		e := newJobEval(job, structs.EvalTriggerNodeUpdate, now)
		e.NodeID = nodeID
		evals = append(evals, e)
	}
	return evals, nil
}

// runsOnEveryNode reports whether job is of a type the system scheduler
// places on every matching node.
func runsOnEveryNode(job *structs.Job) bool {
	if job.IsParent() { // placed through its children only
		return false
	}
	return job.Type == structs.JobTypeSystem || job.Type == structs.JobTypeSysBatch
}

// schedulingChanged reports whether a registration of cur (stored as old, nil
// when new) brings the node into scheduling or changes what the filters
// see: it is new, was not ready, or its datacenter, class, attributes,
// meta or drivers' detection and health changed.
func schedulingChanged(old, cur *structs.Node) bool {
	if old == nil || old.Status != structs.NodeStatusReady {
		return true
	}
	if old.Datacenter != cur.Datacenter || old.NodeClass != cur.NodeClass ||
		!maps.Equal(old.Attributes, cur.Attributes) || !maps.Equal(old.Meta, cur.Meta) {
		return true
	}
	return !maps.EqualFunc(old.Drivers, cur.Drivers, func(a, b *structs.DriverInfo) bool {
		if a == nil || b == nil {
			return a == b
		}
		return a.Detected == b.Detected && a.Healthy == b.Healthy
	})
}
