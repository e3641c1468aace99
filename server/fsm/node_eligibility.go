package fsm

import (
	"fmt"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// applyNodeEligibility sets a node's scheduling eligibility and stores
// the evaluations that came with it; a node made eligible again is new
// capacity, which wakes blocked evaluations.
func (f *FSM) applyNodeEligibility(buf []byte, index uint64) any {
	var req structs.NodeUpdateEligibilityRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode node eligibility: %w", err)
	}
	s := f.State()
	becameEligible := false
	err := s.Write(index, func(tx *state.Txn) error {
		prev, err := tx.NodeByID(req.NodeID)
		if err != nil {
			return err
		}
		if prev == nil {
			return fmt.Errorf("node %s: %w", req.NodeID, structs.ErrUnknownNode)
		}
		if err := tx.UpdateNodeEligibility(req.NodeID, req.Eligibility, req.UpdatedAt); err != nil {
			return err
		}
		becameEligible = req.Eligibility == structs.NodeSchedulingEligible && prev.SchedulingEligibility != structs.NodeSchedulingEligible
		return tx.UpsertEvals(req.Evals)
	})
	if err != nil {
		return err
	}
	f.evalsUpserted(s, req.Evals)
	if becameEligible {
		f.capacityChanged(index)
	}
	return nil
}
