package server

import (
	"sync/atomic"

	"github.com/droverhq/drover/server/broker"
	"github.com/droverhq/drover/structs"
)

// notifier implements fsm.Notifier: it routes evaluations the FSM wrote to
// the broker (pending) or the blocked evals (blocked), and capacity changes
// to the blocked evals. Both drop everything unless this server leads.
type notifier struct {
	broker  *broker.EvalBroker
	blocked *broker.BlockedEvals
	// capacityIndex is the last index at which capacity changed, kept
	// even while not leading so a new leader can tell which restored
	// blocked evaluations missed a change.
	capacityIndex atomic.Uint64
}

// EvalsUpserted implements fsm.Notifier.
func (n *notifier) EvalsUpserted(evals []*structs.Evaluation) {
	for _, e := range evals {
		switch {
		case e.Status == structs.EvalStatusPending:
			n.broker.Enqueue(e)
		case e.Status == structs.EvalStatusBlocked:
			n.blocked.Block(e)
		case e.TerminalStatus():
			n.blocked.Untrack(e.ID)
		}
	}
}

// CapacityChanged implements fsm.Notifier.
func (n *notifier) CapacityChanged(index uint64) {
	for {
		old := n.capacityIndex.Load()
		if index <= old || n.capacityIndex.CompareAndSwap(old, index) {
			break
		}
	}
	n.blocked.Unblock(index)
}
