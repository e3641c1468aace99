package sim

import (
	"fmt"
	"time"

	"github.com/droverhq/drover/server/plan"
	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// planner is the simulator's scheduler.Planner. It applies plans to the
// state store as the leader's applier does, minus Raft: every node of a
// plan is re-checked against a fresh snapshot with plan.Evaluate, the
// accepted nodes' allocations are stamped and written at the next index
// (with the evaluation's end, Plan.EvalUpdate, when all nodes are
// accepted), and a partial
// commit answers with a RefreshIndex and a fresh snapshot. Evaluations are
// written to the store. It records what the current evaluation got.
//
// It is used by one goroutine at a time.
type planner struct {
	store *state.StateStore
	index uint64
	now   func() time.Time

	// What happened since the last reset (one evaluation).
	committed []*structs.Allocation
	failed    bool // an eval written with FailedTGAllocs, or a blocked eval
	rejected  int  // node parts of plans refused by the re-check
}

var _ scheduler.Planner = (*planner)(nil)

// nextIndex returns the index of the next write.
func (p *planner) nextIndex() uint64 {
	p.index++
	return p.index
}

// reset forgets what the previous evaluation got.
func (p *planner) reset() {
	p.committed = p.committed[:0]
	p.failed = false
}

// SubmitPlan implements scheduler.Planner.
func (p *planner) SubmitPlan(pl *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	snap, err := p.store.Snapshot()
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	verdicts, err := plan.Evaluate(snap, pl)
	if err != nil {
		return nil, nil, fmt.Errorf("evaluate plan of eval %s: %w", pl.EvalID, err)
	}
	result, write, ended := plan.Accept(pl, verdicts, p.now().UnixNano())
	p.rejected += len(result.RejectedNodes)
	index := p.index // nothing accepted: nothing written
	if len(write) > 0 || ended != nil {
		index = p.nextIndex()
		err := p.store.Write(index, func(tx *state.Txn) error {
			req := &structs.ApplyPlanResultsRequest{Deployment: pl.Deployment, DeploymentUpdates: pl.DeploymentUpdates}
			if err := tx.ApplyPlanDeployments(req); err != nil {
				return err
			}
			if err := tx.UpsertAllocs(write); err != nil {
				return err
			}
			return tx.UpsertEvals(evalList(ended))
		})
		if err != nil {
			return nil, nil, fmt.Errorf("write plan results of eval %s: %w", pl.EvalID, err)
		}
	}
	for _, v := range verdicts { // in the plan's node order
		p.committed = append(p.committed, result.NodeAllocation[v.NodeID]...)
	}
	result.AllocIndex = index
	if len(result.RejectedNodes) == 0 {
		return result, nil, nil
	}
	result.RefreshIndex = index
	fresh, err := p.store.Snapshot()
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	return result, fresh, nil
}

// evalList is e alone, or nothing for nil.
func evalList(e *structs.Evaluation) []*structs.Evaluation {
	if e == nil {
		return nil
	}
	return []*structs.Evaluation{e}
}

// UpdateEval implements scheduler.Planner.
func (p *planner) UpdateEval(eval *structs.Evaluation) error {
	if len(eval.FailedTGAllocs) > 0 {
		p.failed = true
	}
	return p.writeEval(eval)
}

// CreateEval implements scheduler.Planner.
func (p *planner) CreateEval(eval *structs.Evaluation) error {
	if eval.Status == structs.EvalStatusBlocked {
		p.failed = true
	}
	return p.writeEval(eval)
}

// ReblockEval implements scheduler.Planner.
func (p *planner) ReblockEval(eval *structs.Evaluation) error {
	p.failed = true
	return p.writeEval(eval)
}

func (p *planner) writeEval(eval *structs.Evaluation) error {
	if err := p.store.UpsertEvals(p.nextIndex(), []*structs.Evaluation{eval}); err != nil {
		return fmt.Errorf("write eval %s: %w", eval.ID, err)
	}
	return nil
}
