package state

import (
	"fmt"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// UpsertNode registers or re-registers a node at index. A re-registered
// node keeps its CreateIndex.
func (s *StateStore) UpsertNode(index uint64, node *structs.Node) error {
	return s.Write(index, func(tx *Txn) error { return tx.UpsertNode(node) })
}

func upsertNodeTxn(txn *memdb.Txn, index uint64, node *structs.Node) error {
	if node == nil || node.ID == "" {
		return fmt.Errorf("upsert node: missing ID: %w", structs.ErrInvalid)
	}
	if err := node.CheckShape(); err != nil {
		return fmt.Errorf("upsert node: %w", err)
	}
	existing, err := first[*structs.Node](nil, txn, TableNodes, indexID, node.ID)
	if err != nil {
		return err
	}
	n := node.Copy()
	n.CreateIndex = index
	if existing != nil {
		n.CreateIndex = existing.CreateIndex
	}
	n.ModifyIndex = index
	if err := txn.Insert(TableNodes, n); err != nil {
		return fmt.Errorf("upsert node %q: %w", node.ID, err)
	}
	if err := refreshUsageNode(txn, n.ID, n); err != nil {
		return err
	}
	if err := countClusterGPUs(txn, existing, n); err != nil { // queue_usage.go
		return err
	}
	return setIndex(txn, TableNodes, index)
}

// UpdateNodeStatus sets a node's status and when it was updated, and, for
// a node going down, marks its stopped allocations lost
// (Txn.LoseStoppedAllocs). An unknown node is an error wrapping
// structs.ErrUnknownNode.
func (s *StateStore) UpdateNodeStatus(index uint64, nodeID, status string, updatedAt int64) error {
	return s.Write(index, func(tx *Txn) error {
		prev, err := tx.NodeByID(nodeID)
		if err != nil {
			return err
		}
		if err := tx.UpdateNodeStatus(nodeID, status, updatedAt); err != nil {
			return err
		}
		if status == structs.NodeStatusDown && prev.Status != structs.NodeStatusDown {
			if err := tx.LoseStoppedAllocs(nodeID, updatedAt); err != nil {
				return err
			}
			return tx.MarkDisconnectedAllocs(nodeID, updatedAt) // disconnect.go
		}
		return nil
	})
}

// DeleteNode removes a node. An unknown node is an error wrapping
// structs.ErrUnknownNode. The node's allocations are left alone.
func (s *StateStore) DeleteNode(index uint64, nodeID string) error {
	return s.Write(index, func(tx *Txn) error { return tx.DeleteNode(nodeID) })
}

// NodeByID returns the node with id, or nil.
func (s *StateStore) NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error) {
	return first[*structs.Node](ws, s.db.Txn(false), TableNodes, indexID, id)
}

// Nodes returns every node, sorted by ID.
func (s *StateStore) Nodes(ws memdb.WatchSet) ([]*structs.Node, error) {
	return s.NodesByIDPrefix(ws, "")
}

// NodesByIDPrefix returns the nodes whose ID starts with prefix, sorted by
// ID.
func (s *StateStore) NodesByIDPrefix(ws memdb.WatchSet, prefix string) ([]*structs.Node, error) {
	iter, err := s.db.Txn(false).Get(TableNodes, indexID+"_prefix", prefix)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return collect(ws, iter, nil, func(a, b *structs.Node) int { return strings.Compare(a.ID, b.ID) }), nil
}
