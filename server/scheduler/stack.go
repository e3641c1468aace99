package scheduler

import (
	"fmt"
	"slices"

	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/structs"
)

// The placement chain of a group is one feasible.Stack: feasible.NewStack
// lists every stage in order. This file gives it the stages and inputs
// only the scheduler has: those that read the job's allocations, the
// reservations, the cluster's allocations for preemption, the quota and
// the fair-share queue.

// newStack builds the group's chain for a service or batch job: with the
// job-wide distinct_property filter, the nodes of the group's live
// allocations for spread, the reservations that hold nodes against the
// job (reserve.go), the network domain chosen for its gang (network.go;
// nil: none), preemption when the configuration turns it on
// (preempt.go), and the quota and queue gates (quota.go, queue.go).
func (p *placer) newStack(job *structs.Job, tg *structs.TaskGroup, props *feasible.DistinctProperties, domain feasible.CandidateFilter) (*feasible.Stack, error) {
	opts := slices.Clip(p.stack)
	if f := props.Filter(tg); f != nil {
		opts = append(opts, feasible.WithCandidateFilter(f))
	}
	if domain != nil {
		opts = append(opts, feasible.WithCandidateFilter(domain)) // a gang's network domain (network.go)
	}
	if len(job.Spreads)+len(tg.Spreads) > 0 {
		live, err := p.groupNodes(tg)
		if err != nil {
			return nil, err
		}
		opts = append(opts, feasible.WithSpreadLive(live))
	}
	if len(p.held) > 0 {
		opts = append(opts, feasible.WithReservations(p.held))
	}
	if p.preemption {
		opts = append(opts, feasible.WithPreemption(preempter{p: p, job: job}))
	}
	opts = append(opts, feasible.WithQuota(p.quota), feasible.WithQueue(p.queue))
	return feasible.NewStack(job, tg, p.eval.ID, opts...), nil
}

// newSystemStack builds the group's chain for a system or sysbatch job:
// placed on one node at a time, it takes the quota gate and nothing
// else of the scheduler's.
func (p *placer) newSystemStack(job *structs.Job, tg *structs.TaskGroup) *feasible.Stack {
	opts := append(slices.Clip(p.stack), feasible.WithQuota(p.quota))
	return feasible.NewStack(job, tg, p.eval.ID, opts...)
}

// groupNodes returns the nodes of the group's live allocations, one entry
// per allocation, the plan's included.
func (p *placer) groupNodes(tg *structs.TaskGroup) ([]*structs.Node, error) {
	var live []*structs.Node
	for nodeID, allocs := range p.jobAllocs {
		n, err := p.state.NodeByID(nil, nodeID)
		if err != nil {
			return nil, fmt.Errorf("read node %s: %w", nodeID, err)
		}
		for _, a := range allocs {
			if a.TaskGroup == tg.Name && n != nil {
				live = append(live, n)
			}
		}
	}
	return live, nil
}

// distinctProperties counts the job's allocations per distinct_property
// attribute value, for every group's stack to share.
func (p *placer) distinctProperties(job *structs.Job) (*feasible.DistinctProperties, error) {
	var live []*structs.Allocation
	for _, allocs := range p.jobAllocs {
		live = append(live, allocs...)
	}
	var nodeErr error
	props := feasible.NewDistinctProperties(job, live, func(id string) *structs.Node {
		n, err := p.state.NodeByID(nil, id)
		if err != nil && nodeErr == nil {
			nodeErr = fmt.Errorf("read node %s: %w", id, err)
		}
		return n
	})
	return props, nodeErr
}
