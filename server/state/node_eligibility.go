package state

import (
	"fmt"

	"github.com/droverhq/drover/structs"
)

// UpdateNodeEligibility sets a node's scheduling eligibility. An unknown
// node is an error wrapping structs.ErrUnknownNode.
func (tx *Txn) UpdateNodeEligibility(nodeID, eligibility string, updatedAt int64) error {
	if !structs.ValidEligibility(eligibility) {
		return fmt.Errorf("node %q eligibility %q: %w", nodeID, eligibility, structs.ErrInvalid)
	}
	if err := tx.flushDerived(); err != nil {
		return err
	}
	existing, err := tx.NodeByID(nodeID)
	if err != nil {
		return err
	}
	if existing == nil {
		return fmt.Errorf("update eligibility of node %q: %w", nodeID, structs.ErrUnknownNode)
	}
	n := existing.Copy()
	n.SchedulingEligibility = eligibility
	n.StatusUpdatedAt = updatedAt
	n.ModifyIndex = tx.index
	if err := tx.txn.Insert(TableNodes, n); err != nil {
		return fmt.Errorf("update eligibility of node %q: %w", nodeID, err)
	}
	if err := refreshUsageNode(tx.txn, nodeID, n); err != nil {
		return err
	}
	if err := countClusterGPUs(tx.txn, existing, n); err != nil { // queue_usage.go
		return err
	}
	return setIndex(tx.txn, TableNodes, tx.index)
}
