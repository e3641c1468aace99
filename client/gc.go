package client

import (
	"cmp"
	"context"
	"os"
	"slices"
	"time"

	"github.com/droverhq/drover/client/allocrunner"
)

// Client garbage collection defaults (Nomad's).
const (
	DefaultGCInterval           = time.Minute
	DefaultGCMaxAllocs          = 50
	DefaultGCDiskUsageThreshold = 80.0
)

// gcLoop collects finished allocations every GCInterval.
func (c *Client) gcLoop(ctx context.Context) {
	ticker := time.NewTicker(c.cfg.GCInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			c.collectAllocs(now)
		}
	}
}

// collectAllocs destroys finished allocations, oldest finished first,
// while the client holds more than GCMaxAllocs allocations or its data
// dir's file system is fuller than GCDiskUsageThreshold percent. An
// allocation is finished when all of its tasks are dead and the servers
// know it is terminal, so it is never started again; its runner, state
// and dir go. (Allocations the servers collect, after their
// eval_gc_threshold, go at once: see reconcile.) It returns how many it
// destroyed.
func (c *Client) collectAllocs(now time.Time) int {
	c.allocMu.Lock()
	defer c.allocMu.Unlock()
	type done struct {
		id string
		at time.Time
	}
	var finished []done
	destroyed := 0
	for id, r := range c.runners {
		if !isClosed(r.ar.WaitCh()) {
			continue
		}
		if r.dropped {
			c.destroyLocked(id, "removed by the servers")
			destroyed++
			continue
		}
		if !r.serverTerminal {
			continue
		}
		if r.finishedAt.IsZero() {
			r.finishedAt = now
		}
		finished = append(finished, done{id, r.finishedAt})
	}
	slices.SortFunc(finished, func(a, b done) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	for _, d := range finished {
		overCount := len(c.runners) > c.cfg.GCMaxAllocs
		if !overCount && !c.diskOverThreshold() {
			break
		}
		c.destroyLocked(d.id, "over gc_max_allocs or gc_disk_usage_threshold")
		destroyed++
	}
	return destroyed
}

// destroyLocked forgets a finished allocation: its runner, its state
// and its dir. The caller holds allocMu and has checked that the
// allocation's tasks are dead.
func (c *Client) destroyLocked(id, why string) {
	delete(c.runners, id)
	// Its runner reported its end; whatever the servers still show, it
	// is not an allocation stopped before it ran.
	c.settled[id] = true
	if err := c.db.DeleteAlloc(id); err != nil {
		c.logger.Warn("forgetting allocation state", "alloc_id", id, "error", err)
	}
	if err := os.RemoveAll(allocrunner.AllocDir(c.cfg.DataDir, id)); err != nil {
		c.logger.Warn("removing allocation dir", "alloc_id", id, "error", err)
	}
	c.logger.Debug("garbage collected allocation", "alloc_id", id, "reason", why)
}

// diskOverThreshold reports whether the data dir's file system is fuller
// than GCDiskUsageThreshold percent.
func (c *Client) diskOverThreshold() bool {
	used, ok := diskUsedPercent(c.cfg.DataDir)
	return ok && used > c.cfg.GCDiskUsageThreshold
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
