package scheduler

import (
	"fmt"
	"maps"

	"github.com/droverhq/drover/structs"
)

// finish records a committed attempt on the evaluation. When placements
// failed, a blocked evaluation waits for capacity: the one being processed
// goes back to the blocked set if it was blocked already, otherwise a new
// one is created and linked. Everything else completes the evaluation.
func (s *GenericScheduler) finish(eval *structs.Evaluation, out *outcome) error {
	e := s.record(eval, out)
	if len(out.failed) > 0 {
		if eval.Status == structs.EvalStatusBlocked {
			if err := s.planner.ReblockEval(e); err != nil {
				return fmt.Errorf("reblock eval %s: %w", eval.ID, err)
			}
			return nil
		}
		blocked := eval.CreateBlockedEval(copyMetrics(out.failed), s.now())
		blocked.QueuedAllocations = maps.Clone(out.queued)
		if err := s.planner.CreateEval(blocked); err != nil {
			return fmt.Errorf("create blocked eval for %s: %w", eval.ID, err)
		}
		e.BlockedEval = blocked.ID
	}
	e.Status = structs.EvalStatusComplete
	e.StatusDescription = ""
	if err := s.planner.UpdateEval(e); err != nil {
		return fmt.Errorf("update eval %s: %w", eval.ID, err)
	}
	return nil
}

// fail marks the evaluation failed with desc.
func (s *GenericScheduler) fail(eval *structs.Evaluation, out *outcome, desc string) error {
	e := s.record(eval, out)
	e.Status = structs.EvalStatusFailed
	e.StatusDescription = desc
	if err := s.planner.UpdateEval(e); err != nil {
		return fmt.Errorf("update eval %s: %w", eval.ID, err)
	}
	return nil
}

// record returns a copy of eval carrying the attempt's outcome.
func (s *GenericScheduler) record(eval *structs.Evaluation, out *outcome) *structs.Evaluation {
	e := eval.Copy()
	e.FailedTGAllocs = copyMetrics(out.failed)
	e.QueuedAllocations = maps.Clone(out.queued)
	e.SnapshotIndex = out.snapshotIndex
	e.ModifyTime = s.now().UnixNano()
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
