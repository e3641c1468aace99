package client

import (
	"context"
	"time"

	"github.com/droverhq/drover/client/allocrunner"
	"github.com/droverhq/drover/client/state"
	"github.com/droverhq/drover/structs"
)

// watchAllocs long-polls the node's allocations once the node is
// registered and hands every answer to reconcile.
func (c *Client) watchAllocs(ctx context.Context) {
	select {
	case <-c.registered:
	case <-ctx.Done():
		return
	}
	// index is what the next query blocks on: the last answer's, so that
	// queries block on a server whose index went back too. acted is the
	// newest answer acted on: Raft indexes only grow, so an answer at or
	// below it is a timed-out query or an older view (a lagging server),
	// and acting on an older view would kill allocations it does not know
	// yet.
	var index, acted uint64
	retry := c.cfg.RetryInterval
	for ctx.Err() == nil {
		req := &structs.NodeSpecificRequest{
			NodeID:   c.NodeID(),
			SecretID: c.Node().SecretID,
			QueryOptions: structs.QueryOptions{
				Region:        c.cfg.Region,
				MinQueryIndex: index,
				MaxQueryTime:  c.cfg.MaxQueryTime,
			},
		}
		var resp structs.NodeAllocsResponse
		if err := c.rpc.callBlocking(ctx, c.cfg.MaxQueryTime, structs.RPCNodeGetAllocs, req, &resp); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.logger.Warn("watching allocations; retrying", "error", err, "retry_in", retry)
			sleep(ctx, retry)
			retry = min(retry*2, maxRetryInterval)
			continue
		}
		retry = c.cfg.RetryInterval
		// Index 0 would make every next query return at once.
		index = max(resp.Index, 1)
		if resp.Index <= acted {
			if resp.Index < acted {
				c.logger.Debug("allocations answer older than one acted on; waiting for a newer one", "index", resp.Index, "acted", acted)
			}
			continue
		}
		acted = resp.Index
		c.reconcile(resp.Allocs)
	}
}

// DescStoppedBeforeRun is the client description (and task event) of an
// allocation the servers stopped before its client ran it.
const DescStoppedBeforeRun = "allocation stopped before it ran"

// DescStoppedUntracked is the description of an allocation the servers
// stopped while they listed it running on this client, which has no
// runner for it: the client lost its state, and killed the tasks it
// found without one (crashsafe.go).
const DescStoppedUntracked = "allocation stopped; its client had lost track of it and killed its tasks"

// DescStoppedUnsure is the same when the client's orphan sweep failed:
// the allocation is reported lost, as its tasks may still run.
const DescStoppedUnsure = "allocation stopped; its client had lost track of it and could not make sure its tasks are dead"

// reconcile starts runners for new allocations the servers want running,
// passes updates to existing runners, reports complete the allocations
// stopped before it ran them (and otherwise ignores terminal allocations
// it never ran), and kills runners of allocations the servers dropped,
// then destroys them (state and dir) once their tasks are dead.
func (c *Client) reconcile(allocs []*structs.Allocation) {
	c.allocMu.Lock()
	defer c.allocMu.Unlock()
	c.reconciled = true
	seen := make(map[string]bool, len(allocs))
	for _, a := range allocs {
		seen[a.ID] = true
		if r := c.runners[a.ID]; r != nil {
			r.serverTerminal = a.TerminalStatus()
			if a.AllocModifyIndex > r.modifyIndex || a.DesiredStatus != r.desired {
				r.modifyIndex, r.desired = a.AllocModifyIndex, a.DesiredStatus
				r.ar.Update(a)
			}
			continue
		}
		if a.TerminalStatus() {
			c.reportStoppedBeforeRunLocked(a)
			continue
		}
		c.startRunnerLocked(a)
	}
	for id := range c.settled {
		if !seen[id] {
			delete(c.settled, id)
		}
	}
	for id, r := range c.runners {
		if seen[id] {
			continue
		}
		select {
		case <-r.ar.WaitCh():
			// Gone from the servers (collected, or its node's view
			// changed) and its tasks are dead: its dir goes too.
			c.destroyLocked(id, "removed by the servers")
		default:
			r.dropped = true
			r.ar.Kill("allocation removed by the servers")
		}
	}
}

// reportStoppedBeforeRunLocked reports a, which the servers stopped
// while its client status was still pending (or running, on a client
// that lost its state) and which this client has no runner for and never
// destroyed one of, as complete, once: nothing else would ever finish
// it, and it would stay pending or running in its job's summary for
// good. Its tasks are reported dead with a Killed event saying why.
func (c *Client) reportStoppedBeforeRunLocked(a *structs.Allocation) {
	desc, status := DescStoppedBeforeRun, structs.AllocClientStatusComplete
	switch {
	case c.settled[a.ID]:
		return
	case a.ClientStatus == structs.AllocClientStatusRunning && c.sweepFailed:
		desc, status = DescStoppedUnsure, structs.AllocClientStatusLost
	case a.ClientStatus == structs.AllocClientStatusRunning:
		desc = DescStoppedUntracked
	case a.ClientStatus != structs.AllocClientStatusPending:
		return
	}
	c.settled[a.ID] = true
	now := time.Now()
	u := &structs.Allocation{
		ID: a.ID, NodeID: a.NodeID, JobID: a.JobID, Namespace: a.Namespace,
		ClientStatus: status, ClientDescription: desc,
		TaskStates: map[string]*structs.TaskState{},
	}
	var tasks []*structs.Task
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			tasks = tg.Tasks
		}
	}
	for _, t := range tasks {
		u.TaskStates[t.Name] = &structs.TaskState{State: structs.TaskStateDead, FinishedAt: now,
			Events: []*structs.TaskEvent{{Type: structs.TaskKilled, Time: now.UnixNano(),
				Message: desc, DisplayMessage: desc}}}
	}
	c.logger.Info("reporting a stopped allocation complete", "alloc_id", a.ID, "job", a.JobID, "reason", desc)
	c.queueUpdate(u)
}

func (c *Client) startRunnerLocked(a *structs.Allocation) {
	health, onUpdate := c.trackHealth(a) // deployment_health.go
	ar, err := allocrunner.New(&allocrunner.Config{
		Alloc:    a,
		DataDir:  c.cfg.DataDir,
		Drivers:  c.drivers,
		OnUpdate: onUpdate,
		Logger:   c.logger.Named("alloc"),
		Store:    c.db,
		// GPU shares: MPS daemons and limits (gpu_sharing.go).
		GPUSharing:     gpuSharing{c},
		Users:          c.cfg.Users,
		Node:           c.Node(),
		HostVolumes:    c.cfg.HostVolumes,
		CheckpointRoot: c.checkpointRoot(),
		PreviousDone:   c.previousDoneLocked(a),
		TaskFiles:      c.taskFiles(), // variables.go
	})
	if err != nil {
		c.logger.Error("cannot run allocation", "alloc_id", a.ID, "error", err)
		return
	}
	c.runners[a.ID] = &runner{ar: ar, modifyIndex: a.AllocModifyIndex, desired: a.DesiredStatus, health: health}
	c.logger.Info("running allocation", "alloc_id", a.ID, "job", a.JobID, "group", a.TaskGroup, "gpus", a.DeviceIDs())
	go ar.Run() // ends when its tasks are dead; Shutdown waits on WaitCh
}

// restoreRunners brings back the allocations an earlier client on this
// DataDir ran, from its state file, before the first allocation query:
// reconcile then treats them as its own, so an allocation that is still
// running is neither started twice nor replaced. Their running tasks are
// re-attached by the alloc runners.
func (c *Client) restoreRunners() {
	stored, bad, err := c.db.GetAllocs()
	if err != nil {
		c.logger.Error("reading client state; restoring nothing", "error", err)
		stored, bad = nil, nil
	}
	for id, err := range bad {
		c.logger.Error("unreadable allocation state; forgetting it", "alloc_id", id, "error", err)
		_ = c.db.DeleteAlloc(id)
	}
	// Runners first, so that the tasks of an allocation whose runner
	// cannot be made are not kept from the orphan sweep: nothing would
	// watch them.
	type restored struct {
		s  *state.Alloc
		ar *allocrunner.AllocRunner
	}
	var ok []restored
	var kept []*state.Alloc
	for _, s := range stored {
		a := s.Alloc
		_, onUpdate := c.trackHealth(a)
		ar, err := allocrunner.New(&allocrunner.Config{
			Alloc:          a,
			DataDir:        c.cfg.DataDir,
			Drivers:        c.drivers,
			OnUpdate:       onUpdate,
			Logger:         c.logger.Named("alloc"),
			Store:          c.db,
			Restore:        &allocrunner.Restored{TaskStates: s.TaskStates, TaskHandles: s.TaskHandles},
			GPUSharing:     gpuSharing{c},
			Users:          c.cfg.Users,
			Node:           c.Node(),
			HostVolumes:    c.cfg.HostVolumes,
			CheckpointRoot: c.checkpointRoot(),
			TaskFiles:      c.taskFiles(),
		})
		if err != nil {
			c.logger.Error("cannot restore allocation; its tasks are killed", "alloc_id", a.ID, "error", err)
			_ = c.db.DeleteAlloc(a.ID)
			continue
		}
		ok = append(ok, restored{s, ar})
		kept = append(kept, s)
	}
	c.killOrphans(kept)
	c.allocMu.Lock()
	defer c.allocMu.Unlock()
	for _, r := range ok {
		a := r.s.Alloc
		c.runners[a.ID] = &runner{ar: r.ar, modifyIndex: a.AllocModifyIndex, desired: a.DesiredStatus}
		c.logger.Info("restored allocation", "alloc_id", a.ID, "job", a.JobID, "running_tasks", len(r.s.TaskHandles))
		go r.ar.Run()
	}
}

// queueUpdate keeps the newest client state of each allocation until
// the next batch. It is the alloc runners' OnUpdate: it must not block.
func (c *Client) queueUpdate(a *structs.Allocation) {
	c.updMu.Lock()
	c.pending[a.ID] = a
	c.updMu.Unlock()
	c.services.Observe(a) // services.go
}

// updateLoop sends queued allocation updates every UpdateInterval until
// ctx ends, then flushes what is left. After a failed send it waits
// RetryInterval before the next, so that a fleet does not hammer servers
// that are down or refusing.
func (c *Client) updateLoop(ctx context.Context) {
	defer close(c.updaterDone)
	t := time.NewTicker(c.cfg.UpdateInterval)
	defer t.Stop()
	var notBefore time.Time
	for {
		select {
		case now := <-t.C:
			if now.Before(notBefore) {
				continue
			}
			// Not ctx: a send cut off by the stop could still reach a
			// server after finalFlush's newer states and undo them (a
			// task killed at shutdown reported running). The call ends
			// within the RPC timeout; the stop waits for it.
			if err := c.flushUpdates(context.WithoutCancel(ctx)); err != nil {
				notBefore = now.Add(c.cfg.RetryInterval)
			}
		case <-ctx.Done():
			c.finalFlush()
			return
		}
	}
}

// finalFlush sends the queued updates at shutdown, retrying until they
// are through or finalFlushTimeout passes: the last states of the tasks
// the client just killed must reach the servers, and one send on a
// connection that broke meanwhile is not enough.
func (c *Client) finalFlush() {
	ctx, cancel := context.WithTimeout(context.Background(), finalFlushTimeout)
	defer cancel()
	for {
		err := c.flushUpdates(ctx)
		if err == nil {
			return
		}
		if !sleep(ctx, finalFlushRetry) {
			c.logger.Error("final allocation updates not sent", "error", err)
			return
		}
	}
}

// flushUpdates sends the queued updates in one Node.UpdateAlloc. On
// failure they are queued again unless a newer one arrived meanwhile.
func (c *Client) flushUpdates(ctx context.Context) error {
	c.updMu.Lock()
	if len(c.pending) == 0 {
		c.updMu.Unlock()
		return nil
	}
	batch := make([]*structs.Allocation, 0, len(c.pending))
	for _, a := range c.pending {
		batch = append(batch, a)
	}
	c.pending = map[string]*structs.Allocation{}
	c.updMu.Unlock()

	req := &structs.AllocUpdateRequest{NodeID: c.NodeID(), SecretID: c.Node().SecretID, Alloc: batch,
		WriteRequest: structs.WriteRequest{Region: c.cfg.Region}}
	var resp structs.GenericResponse
	if err := c.rpc.call(ctx, structs.RPCNodeUpdateAlloc, req, &resp); err != nil {
		c.logger.Warn("allocation updates; will retry", "count", len(batch), "error", err)
		c.updMu.Lock()
		for _, a := range batch {
			if _, newer := c.pending[a.ID]; !newer {
				c.pending[a.ID] = a
			}
		}
		c.updMu.Unlock()
		return err
	}
	c.logger.Debug("allocation updates sent", "count", len(batch), "index", resp.Index)
	return nil
}
