package scheduler

import (
	"time"

	"github.com/droverhq/drover/structs"
)

// disconnected reports whether a, a live allocation on a node that is
// down, is within its group's disconnect window (disconnect.lost_after,
// max_client_disconnect), counted from when the node went down: it is
// then left alone (unknown, not lost), and the window's end is recorded
// for a follow-up evaluation. A node that comes back in time makes it an
// allocation like any other, the older of a name, so that a replacement
// placed meanwhile is the one stopped (Drover keeps the original).
func (r *reconciliation) disconnected(a *structs.Allocation, tg *structs.TaskGroup, n *structs.Node, now time.Time) bool {
	window := tg.DisconnectWindow()
	if window <= 0 || n == nil || n.Status != structs.NodeStatusDown || n.StatusUpdatedAt == 0 {
		return false
	}
	end := time.Unix(0, n.StatusUpdatedAt).Add(window)
	if !now.Before(end) {
		return false
	}
	if r.lostAt.IsZero() || end.Before(r.lostAt) {
		r.lostAt = end
	}
	return true
}
