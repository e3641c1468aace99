package client

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/droverhq/drover/client/allocrunner"
)

// Client garbage collection defaults (Nomad's).
const (
	DefaultGCInterval           = time.Minute
	DefaultGCMaxAllocs          = 50
	DefaultGCDiskUsageThreshold = 80.0
)

// gcLoop collects finished allocations every GCInterval and removes the
// dirs of destroyed ones (emptyTrash) as soon as there are any: first
// those a previous agent left in the trash.
func (c *Client) gcLoop(ctx context.Context) {
	ticker := time.NewTicker(c.cfg.GCInterval)
	defer ticker.Stop()
	c.emptyTrash(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			c.collectAllocs(ctx, now)
			c.collectCheckpoints(ctx) // checkpoint_gc.go
		case <-c.trashKick:
		}
		c.emptyTrash(ctx)
	}
}

// trashDir holds the dirs of destroyed allocations until gcLoop removes
// them. destroyLocked moves a dir there (a rename, instant) instead of
// removing it under allocMu: the dir of an allocation that wrote a large
// dataset or checkpoint can take seconds to remove, and everything the
// client does with allocations waits for allocMu. It is beside the
// alloc dirs, on the same file system, so the rename cannot copy.
func trashDir(dataDir string) string { return filepath.Join(dataDir, "alloc-trash") }

// emptyTrash removes every dir in the trash, outside any lock, until ctx
// ends (a client shutting down does not wait for a large removal). A dir
// left by an agent that died while removing it goes at the next start.
func (c *Client) emptyTrash(ctx context.Context) {
	dir := trashDir(c.cfg.DataDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			c.logger.Warn("reading the alloc dir trash", "path", dir, "error", err)
		}
		return
	}
	for _, e := range entries {
		if ctx.Err() != nil {
			return
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			c.logger.Warn("removing allocation dir", "path", filepath.Join(dir, e.Name()), "error", err)
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
//
// Over the count, the oldest go at once; then, while the disk is over
// its threshold, one more at a time, each removed from disk before the
// next check (outside allocMu), so that no more go than the disk needs.
func (c *Client) collectAllocs(ctx context.Context, now time.Time) int {
	destroyed, disk := c.collectOverCount(now)
	if !disk {
		return destroyed
	}
	for ctx.Err() == nil {
		c.emptyTrash(ctx)
		if !c.diskOverThreshold() || !c.collectOldest() {
			break
		}
		destroyed++
	}
	return destroyed
}

// trashStaleAllocDirsLocked moves to the trash the alloc dirs that no
// runner owns, once the client has the servers' allocations (reconciled):
// every allocation they want has a runner by then, so such a dir belongs
// to an allocation nobody wants any more, left by an agent that lost its
// state (its tasks were killed by killOrphans at start). Until the first
// answer from the servers, a dir is kept: the allocation may run again
// in it. After an orphan sweep that failed nothing is trashed (a task
// may still run there). The caller holds allocMu.
func (c *Client) trashStaleAllocDirsLocked() {
	if !c.reconciled || c.sweepFailed {
		return
	}
	root := filepath.Join(c.cfg.DataDir, "alloc")
	entries, err := os.ReadDir(root)
	if err != nil {
		return // no alloc dir yet
	}
	moved := 0
	for _, e := range entries {
		if !e.IsDir() || c.runners[e.Name()] != nil {
			continue
		}
		if err := c.moveToTrash(e.Name()); err != nil {
			c.logger.Warn("moving a stale alloc dir to the trash", "alloc_id", e.Name(), "error", err)
			continue
		}
		moved++
	}
	if moved > 0 {
		c.logger.Info("alloc dirs of no allocation moved to the trash", "count", moved)
	}
}

// collectOldest destroys the oldest finished allocation, if any.
func (c *Client) collectOldest() bool {
	c.allocMu.Lock()
	defer c.allocMu.Unlock()
	var oldest string
	var at time.Time
	for id, r := range c.runners {
		if !r.serverTerminal || r.finishedAt.IsZero() || !isClosed(r.ar.WaitCh()) {
			continue
		}
		if oldest == "" || r.finishedAt.Before(at) || (r.finishedAt.Equal(at) && id < oldest) {
			oldest, at = id, r.finishedAt
		}
	}
	if oldest == "" {
		return false
	}
	c.destroyLocked(oldest, "over gc_disk_usage_threshold")
	return true
}

// collectOverCount destroys dropped allocations and, over GCMaxAllocs,
// the oldest finished ones. disk reports that finished allocations are
// left and the disk should be checked.
func (c *Client) collectOverCount(now time.Time) (destroyed int, disk bool) {
	c.allocMu.Lock()
	defer c.allocMu.Unlock()
	c.trashStaleAllocDirsLocked()
	type done struct {
		id string
		at time.Time
	}
	var finished []done
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
		if len(c.runners) <= c.cfg.GCMaxAllocs {
			return destroyed, true
		}
		c.destroyLocked(d.id, "over gc_max_allocs")
		destroyed++
	}
	return destroyed, false
}

// destroyLocked forgets a finished allocation: its runner, its state
// and its dir, which it moves to the trash for gcLoop to remove. The
// caller holds allocMu and has checked that the allocation's tasks are
// dead.
func (c *Client) destroyLocked(id, why string) {
	if r := c.runners[id]; r != nil && r.health != nil {
		r.health.stop()
	}
	delete(c.runners, id)
	// Its runner reported its end; whatever the servers still show, it
	// is not an allocation stopped before it ran.
	c.settled[id] = true
	if err := c.db.DeleteAlloc(id); err != nil {
		c.logger.Warn("forgetting allocation state", "alloc_id", id, "error", err)
	}
	if err := c.moveToTrash(id); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.logger.Warn("moving allocation dir to the trash; removing it in place", "alloc_id", id, "error", err)
		if err := os.RemoveAll(allocrunner.AllocDir(c.cfg.DataDir, id)); err != nil {
			c.logger.Warn("removing allocation dir", "alloc_id", id, "error", err)
		}
	}
	c.logger.Debug("garbage collected allocation", "alloc_id", id, "reason", why)
}

// moveToTrash renames allocation id's dir into the trash and wakes
// gcLoop to remove it.
func (c *Client) moveToTrash(id string) error {
	trash := trashDir(c.cfg.DataDir)
	if err := os.MkdirAll(trash, 0o700); err != nil {
		return err
	}
	// A name of its own: a dir left there by an earlier agent for the
	// same allocation must not make the rename fail.
	name := id + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := os.Rename(allocrunner.AllocDir(c.cfg.DataDir, id), filepath.Join(trash, name)); err != nil {
		return err
	}
	select {
	case c.trashKick <- struct{}{}:
	default: // a removal is already due
	}
	return nil
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
