package client

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/droverhq/drover/client/state"
	"github.com/droverhq/drover/drivers"
)

// orphanSweepTimeout bounds the kill of the tasks a client finds
// running without a state entry.
const orphanSweepTimeout = 30 * time.Second

// openState opens the state file; a damaged one (empty, truncated,
// corrupt) is moved aside with one ERROR line naming both paths and a
// fresh one is opened in its place. The tasks the old file knew about
// are then unknown: restoreRunners kills them (killOrphans) and the
// servers' allocations drive what runs again.
func (c *Client) openState() (*state.DB, error) {
	path := state.Path(c.cfg.DataDir)
	db, err := state.Open(path)
	if !errors.Is(err, state.ErrDamaged) {
		return db, err
	}
	aside, merr := state.MoveAside(path, time.Now())
	if merr != nil {
		return nil, errors.Join(err, merr)
	}
	c.logger.Error("client state file damaged: moved it aside and starting with empty state; tasks it knew about are killed and the servers' allocations run again",
		"path", path, "moved_to", aside, "error", err)
	return state.Open(path)
}

// killOrphans kills, through every driver that can find its tasks
// without the state file (drivers.OrphanKiller), each task under this
// client's alloc dirs that no stored handle names: left by an agent
// whose state was lost or damaged, or one that died between starting a
// task and saving its handle. No re-attach is possible for those, so
// killing them is what keeps a GPU from being held while the servers
// think it free. It runs before any alloc runner starts.
func (c *Client) killOrphans(stored []*state.Alloc) {
	keep := map[string]bool{}
	for _, s := range stored {
		for _, h := range s.TaskHandles {
			keep[h.ID] = true
		}
	}
	root := filepath.Join(c.cfg.DataDir, "alloc")
	ctx, cancel := context.WithTimeout(context.Background(), orphanSweepTimeout)
	defer cancel()
	for name, d := range c.drivers {
		k, ok := d.(drivers.OrphanKiller)
		if !ok {
			continue
		}
		killed, err := k.KillOrphans(ctx, root, keep)
		if len(killed) > 0 {
			c.logger.Warn("killed tasks left running without client state", "driver", name, "tasks", killed)
		}
		if err != nil {
			c.sweepFailed = true
			c.logger.Warn("looking for tasks left running without client state; alloc dirs of no allocation are kept for the next start's sweep",
				"driver", name, "error", err)
		}
	}
}
