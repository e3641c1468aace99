package state

import "github.com/droverhq/drover/structs"

// MarkDisconnectedAllocs marks unknown, at the node's going down, the
// node's allocations meant to run whose group has a disconnect window
// (disconnect.lost_after, max_client_disconnect): they may still run on
// a node that only lost its connection. The scheduler replaces them (per
// disconnect.replace) and marks them lost once the window has passed; a
// client that comes back in time reports them again.
func (tx *Txn) MarkDisconnectedAllocs(nodeID string, at int64) error {
	allocs, err := allocsOn(tx.txn, nodeID)
	if err != nil {
		return err
	}
	var unknown []*structs.Allocation
	for _, a := range allocs {
		if a.DesiredStatus != structs.AllocDesiredStatusRun || a.ClientTerminalStatus() || a.Job == nil {
			continue
		}
		if a.Job.LookupTaskGroup(a.TaskGroup).DisconnectWindow() > 0 {
			unknown = append(unknown, &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusUnknown,
				ClientDescription: structs.DescNodeDisconnected, ModifyTime: at})
		}
	}
	return tx.UpdateAllocsFromClient(unknown)
}
