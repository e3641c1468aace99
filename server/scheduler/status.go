package scheduler

import (
	"fmt"
	"maps"
	"strings"

	"github.com/droverhq/drover/structs"
)

// finish records a committed attempt on the evaluation. When placements
// failed, a blocked evaluation waits for capacity: the one being processed
// goes back to the blocked set if it was blocked already, otherwise a new
// one is created and linked. Delayed reschedules get a follow-up
// evaluation. Everything else completes the evaluation.
func (s *GenericScheduler) finish(eval *structs.Evaluation, out *outcome) error {
	if out.evalWritten {
		return nil
	}
	e := s.record(eval, out)
	if err := s.followUp(e, out); err != nil {
		return err
	}
	if len(out.failed) > 0 {
		if eval.Status == structs.EvalStatusBlocked {
			// It waits for capacity now, whatever blocked it before.
			e.TriggeredBy = structs.EvalTriggerQueuedAllocs
			if err := s.planner.ReblockEval(e); err != nil {
				return fmt.Errorf("reblock eval %s: %w", eval.ID, err)
			}
			return nil
		}
		if err := s.createBlocked(e, eval, out, structs.EvalTriggerQueuedAllocs); err != nil {
			return err
		}
	}
	e.Status = structs.EvalStatusComplete
	if err := s.planner.UpdateEval(e); err != nil {
		return fmt.Errorf("update eval %s: %w", eval.ID, err)
	}
	return nil
}

// fail marks the evaluation failed with desc: its plans lost to
// concurrent ones in every attempt. Its job still misses allocations, so
// a blocked evaluation (EvalTriggerMaxPlans) retries it shortly (a
// blocked evaluation that fails goes back to the blocked set, as such).
func (s *GenericScheduler) fail(eval *structs.Evaluation, out *outcome, desc string) error {
	e := s.record(eval, out)
	if err := s.followUp(e, out); err != nil {
		return err
	}
	if eval.Status == structs.EvalStatusBlocked {
		// It found room and lost it to concurrent plans: it is retried
		// soon, not when capacity changes (broker.BlockedEvals).
		e.StatusDescription = desc
		e.TriggeredBy = structs.EvalTriggerMaxPlans
		if err := s.planner.ReblockEval(e); err != nil {
			return fmt.Errorf("reblock eval %s: %w", eval.ID, err)
		}
		return nil
	}
	if err := s.createBlocked(e, eval, out, structs.EvalTriggerMaxPlans); err != nil {
		return err
	}
	e.Status = structs.EvalStatusFailed
	e.StatusDescription = desc
	if err := s.planner.UpdateEval(e); err != nil {
		return fmt.Errorf("update eval %s: %w", eval.ID, err)
	}
	return nil
}

// createBlocked creates the blocked evaluation that follows eval and
// links it from e.
func (s *GenericScheduler) createBlocked(e, eval *structs.Evaluation, out *outcome, trigger string) error {
	blocked := eval.CreateBlockedEval(copyMetrics(out.failed), s.now())
	blocked.TriggeredBy = trigger
	blocked.QueuedAllocations = maps.Clone(out.queued)
	if err := s.planner.CreateEval(blocked); err != nil {
		return fmt.Errorf("create blocked eval for %s: %w", eval.ID, err)
	}
	e.BlockedEval = blocked.ID
	return nil
}

// followUp creates the evaluation that places delayed reschedules when
// they become due, and links it from e.
func (s *GenericScheduler) followUp(e *structs.Evaluation, out *outcome) error {
	if out.retryAt.IsZero() {
		return nil
	}
	next := followUpEval(e, out.retryAt, s.now())
	if err := s.planner.CreateEval(next); err != nil {
		return fmt.Errorf("create follow-up eval for %s: %w", e.ID, err)
	}
	e.NextEval = next.ID
	return nil
}

// record returns a copy of eval carrying the attempt's outcome.
func (s *GenericScheduler) record(eval *structs.Evaluation, out *outcome) *structs.Evaluation {
	e := eval.Copy()
	e.FailedTGAllocs = copyMetrics(out.failed)
	e.QueuedAllocations = maps.Clone(out.queued)
	e.SnapshotIndex = out.snapshotIndex
	e.ModifyTime = s.now().UnixNano()
	e.StatusDescription = ""
	if len(out.gaveUp) > 0 {
		e.StatusDescription = fmt.Sprintf("not rescheduled, attempts used up: %s", strings.Join(out.gaveUp, ", "))
	}
	return e
}

func copyMetrics(in map[string]*structs.AllocMetric) map[string]*structs.AllocMetric {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]*structs.AllocMetric, len(in))
	for k, v := range in {
		out[k] = v.Copy()
	}
	return out
}
