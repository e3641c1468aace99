package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	metrics "github.com/hashicorp/go-metrics"

	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// workerSchedulers are the evaluation types the workers dequeue.
var workerSchedulers = []string{structs.JobTypeService, structs.JobTypeBatch, structs.JobTypeSystem, structs.JobTypeSysBatch}

// worker dequeues evaluations from the broker and runs the scheduler on
// them. It runs on the leader, stopped with the leader's duties.
type worker struct {
	srv    *Server
	logger hclog.Logger
}

func (w *worker) run(ctx context.Context) {
	for {
		eval, token, err := w.srv.broker.Dequeue(ctx, workerSchedulers)
		if err != nil {
			return
		}
		if ctx.Err() != nil {
			// The duties are stopping: the broker hands out ready
			// evaluations before it looks at ctx, and a backlog must
			// not hold a stepping-down leader for minutes.
			_ = w.srv.broker.Nack(eval.ID, token)
			return
		}
		logger := w.logger.With("eval_id", eval.ID, "job_id", eval.JobID)
		if err := w.process(ctx, eval, token); err != nil {
			logger.Warn("evaluation not processed, nacking", "error", err)
			if err := w.srv.broker.Nack(eval.ID, token); err != nil {
				logger.Debug("nack", "error", err)
			}
			continue
		}
		if err := w.srv.broker.Ack(eval.ID, token); err != nil {
			logger.Warn("ack", "error", err)
		}
	}
}

// process runs the scheduler for one evaluation on a snapshot at least as
// new as the evaluation.
func (w *worker) process(ctx context.Context, eval *structs.Evaluation, token string) error {
	snap, index, err := w.srv.snapshotAtLeast(ctx, eval.ModifyIndex)
	if err != nil {
		return err
	}
	p := &evalPlanner{ctx: ctx, srv: w.srv, evalID: eval.ID, token: token, snapshotIndex: index}
	opts := append([]scheduler.Option{scheduler.WithNodeCache(w.srv.nodeCache)}, w.srv.config.schedulerOptions...)
	sched, err := scheduler.New(eval.Type, w.logger, snap, p, opts...)
	if errors.Is(err, scheduler.ErrNotSupported) || errors.Is(err, scheduler.ErrUnknownType) {
		failed := eval.Copy()
		failed.Status = structs.EvalStatusFailed
		failed.StatusDescription = err.Error()
		return p.UpdateEval(failed)
	}
	if err != nil {
		return err
	}
	// drover.scheduler.process{type}: how long one evaluation takes to
	// schedule, plans included.
	defer metrics.MeasureSinceWithLabels([]string{"scheduler", "process"}, time.Now(), []metrics.Label{{Name: "type", Value: eval.Type}})
	return sched.Process(eval.Copy())
}

// snapshotAtLeast waits (bounded) until state reaches index and returns a
// snapshot and its index.
func (s *Server) snapshotAtLeast(ctx context.Context, index uint64) (*state.StateSnapshot, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, indexWaitTimeout)
	defer cancel()
	backoff := time.Millisecond
	for {
		snap, err := s.State().Snapshot()
		if err != nil {
			return nil, 0, err
		}
		latest, err := snap.LatestIndex()
		if err != nil {
			return nil, 0, err
		}
		if latest >= index {
			return snap, latest, nil
		}
		select {
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("wait for state index %d (at %d): %w", index, latest, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}

// evalPlanner is the scheduler.Planner for one evaluation. It holds the
// worker's context because the Planner interface has none; it lives only
// while the evaluation is processed.
type evalPlanner struct {
	ctx           context.Context
	srv           *Server
	evalID, token string
	snapshotIndex uint64
}

var _ scheduler.Planner = (*evalPlanner)(nil)

// SubmitPlan implements scheduler.Planner.
func (p *evalPlanner) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	// A plan for an evaluation the broker redelivered elsewhere must not
	// be applied: the other worker owns it now.
	if err := p.owned("submit plan"); err != nil {
		return nil, nil, err
	}
	// drover.plan.submit: from submitting a plan to the applier's answer
	// (queueing, the re-check and the Raft commit).
	start := time.Now()
	result, err := p.srv.applier.Submit(p.ctx, plan)
	metrics.MeasureSince([]string{"plan", "submit"}, start)
	if err != nil {
		return nil, nil, err
	}
	if result.RefreshIndex == 0 {
		return result, nil, nil
	}
	snap, index, err := p.srv.snapshotAtLeast(p.ctx, result.RefreshIndex)
	if err != nil {
		return nil, nil, err
	}
	p.snapshotIndex = index
	return result, snap, nil
}

// owned checks that the broker has not redelivered the evaluation to
// another worker: one that timed out here must not overwrite what the new
// owner writes.
func (p *evalPlanner) owned(what string) error {
	if err := p.srv.broker.OutstandingReset(p.evalID, p.token); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// UpdateEval implements scheduler.Planner.
func (p *evalPlanner) UpdateEval(eval *structs.Evaluation) error {
	if err := p.owned("update eval"); err != nil {
		return err
	}
	e := eval.Copy()
	e.ModifyTime = time.Now().UnixNano()
	return p.srv.upsertEvals(e)
}

// CreateEval implements scheduler.Planner. The evaluation's SnapshotIndex
// is at least the worker's, so the blocked evals can tell whether it
// missed a capacity change (and never loop on a stale one).
func (p *evalPlanner) CreateEval(eval *structs.Evaluation) error {
	if err := p.owned("create eval"); err != nil {
		return err
	}
	e := eval.Copy()
	now := time.Now().UnixNano()
	if e.CreateTime == 0 {
		e.CreateTime = now
	}
	e.ModifyTime = now
	e.SnapshotIndex = max(e.SnapshotIndex, p.snapshotIndex)
	return p.srv.upsertEvals(e)
}

// ReblockEval implements scheduler.Planner: the evaluation goes back to
// the blocked evals through the FSM, stamped like CreateEval's.
func (p *evalPlanner) ReblockEval(eval *structs.Evaluation) error {
	if err := p.owned("reblock eval"); err != nil {
		return err
	}
	e := eval.Copy()
	e.Status = structs.EvalStatusBlocked
	e.ModifyTime = time.Now().UnixNano()
	e.SnapshotIndex = max(e.SnapshotIndex, p.snapshotIndex)
	return p.srv.upsertEvals(e)
}
