package server

import (
	"context"
	"fmt"
	"time"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// Garbage collection defaults (Nomad's).
const (
	DefaultGCInterval      = 5 * time.Minute
	DefaultJobGCThreshold  = 4 * time.Hour
	DefaultEvalGCThreshold = time.Hour
	DefaultNodeGCThreshold = 24 * time.Hour
)

// gcThresholds are the ages past which finished objects are collected;
// zero collects them whatever their age (a forced collection).
type gcThresholds struct {
	job, eval, node time.Duration
}

// runGC collects garbage every GCInterval while this server leads.
func (s *Server) runGC(ctx context.Context) {
	ticker := time.NewTicker(s.config.GCInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			th := gcThresholds{job: s.config.JobGCThreshold, eval: s.config.EvalGCThreshold, node: s.config.NodeGCThreshold}
			if _, err := s.collectGarbage(now, th); err != nil {
				s.logger.Warn("garbage collection", "error", err)
			}
		}
	}
}

// collectGarbage deletes, through Raft in batches of at most
// structs.GCMaxBatch objects, what state holds that th makes collectable
// at now, and returns how many objects it asked to delete. Only one
// collection runs at a time.
func (s *Server) collectGarbage(now time.Time, th gcThresholds) (int, error) {
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	snap, err := s.State().Snapshot()
	if err != nil {
		return 0, err
	}
	units, err := findGarbage(snap, now, th)
	if err != nil {
		return 0, fmt.Errorf("find garbage: %w", err)
	}
	total, jobs := 0, 0
	for _, u := range units {
		total += u.Len()
		jobs += len(u.Jobs)
	}
	// Flagged so that a server of an older version skips the entry
	// rather than stop (it keeps the objects; nothing else differs).
	for _, batch := range splitGC(units, structs.GCMaxBatch) {
		if _, err := s.raftApply(structs.GarbageCollectRequestType|structs.IgnoreUnknownTypeFlag, batch); err != nil {
			return 0, fmt.Errorf("apply garbage collection: %w", err)
		}
	}
	if total > 0 {
		s.logger.Debug("garbage collected", "objects", total, "jobs", jobs)
	}
	return total, nil
}

// splitGC packs units into requests of at most max objects. A unit is
// never cut: a job goes in the same entry as its allocations and
// evaluations (deleting a batch job's allocations alone would make it
// pending again), even when that entry holds more than max.
func splitGC(units []*structs.GarbageCollectRequest, max int) []*structs.GarbageCollectRequest {
	var out []*structs.GarbageCollectRequest
	cur := &structs.GarbageCollectRequest{}
	for _, u := range units {
		if cur.Len() > 0 && cur.Len()+u.Len() > max {
			out = append(out, cur)
			cur = &structs.GarbageCollectRequest{}
		}
		cur.Allocs = append(cur.Allocs, u.Allocs...)
		cur.Evals = append(cur.Evals, u.Evals...)
		cur.Jobs = append(cur.Jobs, u.Jobs...)
		cur.Nodes = append(cur.Nodes, u.Nodes...)
		cur.ACLTokens = append(cur.ACLTokens, u.ACLTokens...)
	}
	if cur.Len() > 0 {
		out = append(out, cur)
	}
	return out
}

// olderThan reports whether a time stamp (unix nanoseconds) is at least
// d before now; d of zero ignores the age.
func olderThan(stamp int64, now time.Time, d time.Duration) bool {
	return d == 0 || now.Sub(time.Unix(0, stamp)) >= d
}

// findGarbage decides, from a state snapshot, what is collectable at now
// (Nomad's core GC rules):
//   - stopped jobs, and dead batch jobs, whose allocations and
//     evaluations are all finished and last changed at least th.job ago,
//     with all of them;
//   - finished allocations that changed at least th.eval ago and whose
//     job is gone (purged) or stopped, or that a newer allocation of the
//     same name (and, for system jobs, node) replaced: the latest one of
//     a live or dead job stays until the job goes, as it makes the job's
//     status;
//   - finished evaluations that changed at least th.eval ago, of no live
//     batch job, whose allocations are all collected;
//   - nodes down for at least th.node with no unfinished allocation;
//   - ACL tokens expired at least th.eval ago.
//
// It returns units that must each be applied whole: one per collected
// job (with its allocations and evaluations), then one of the rest.
func findGarbage(snap *state.StateSnapshot, now time.Time, th gcThresholds) ([]*structs.GarbageCollectRequest, error) {
	g := &garbage{snap: snap, now: now, th: th, req: &structs.GarbageCollectRequest{},
		allocs: map[string]bool{}, evals: map[string]bool{}, jobs: map[jobKeyGC]*jobGC{}}
	if err := g.findJobs(); err != nil {
		return nil, err
	}
	if err := g.findAllocs(); err != nil {
		return nil, err
	}
	if err := g.findEvals(); err != nil {
		return nil, err
	}
	if err := g.findNodes(); err != nil {
		return nil, err
	}
	if err := g.findTokens(); err != nil {
		return nil, err
	}
	if g.req.Len() > 0 {
		g.units = append(g.units, g.req)
	}
	return g.units, nil
}

type jobKeyGC struct{ namespace, id string }

// jobGC is what findGarbage learned about one job.
type jobGC struct {
	job *structs.Job // nil: purged
	// newest is the CreateIndex of the newest allocation of each slot
	// (slot).
	newest map[string]uint64
}

// slot is what a newer allocation replaces: the same name, and for a
// system or sysbatch job (whose allocations share a name, one per node)
// the same node. The newest of a slot marks its work done; it is kept.
func (j *jobGC) slot(a *structs.Allocation) string {
	if j.job != nil && (j.job.Type == structs.JobTypeSystem || j.job.Type == structs.JobTypeSysBatch) {
		return a.Name + "\x00" + a.NodeID
	}
	return a.Name
}

type garbage struct {
	snap   *state.StateSnapshot
	now    time.Time
	th     gcThresholds
	req    *structs.GarbageCollectRequest
	allocs map[string]bool // collected
	evals  map[string]bool // collected
	jobs   map[jobKeyGC]*jobGC
	// units are the collected jobs, each with its allocations and
	// evaluations; req holds the rest.
	units []*structs.GarbageCollectRequest
}

func (g *garbage) addAlloc(a *structs.Allocation) {
	if !g.allocs[a.ID] {
		g.allocs[a.ID] = true
		g.req.Allocs = append(g.req.Allocs, a.ID)
	}
}

func (g *garbage) addEval(e *structs.Evaluation) {
	if !g.evals[e.ID] {
		g.evals[e.ID] = true
		g.req.Evals = append(g.req.Evals, e.ID)
	}
}

// findJobs collects finished stopped jobs and dead batch jobs with their
// allocations and evaluations.
func (g *garbage) findJobs() error {
	jobs, err := g.snap.Jobs(nil, "*")
	if err != nil {
		return err
	}
	for _, job := range jobs {
		if !job.Stop && !(isBatchJob(job) && job.Status == structs.JobStatusDead) {
			continue
		}
		allocs, err := g.snap.AllocsByJob(nil, job.Namespace, job.ID)
		if err != nil {
			return err
		}
		evals, err := g.snap.EvalsByJob(nil, job.Namespace, job.ID)
		if err != nil {
			return err
		}
		last, finished := job.SubmitTime, true
		for _, a := range allocs {
			finished = finished && allocCollectable(a)
			last = max(last, a.ModifyTime)
		}
		for _, e := range evals {
			finished = finished && e.TerminalStatus()
			last = max(last, e.ModifyTime)
		}
		if !finished || !olderThan(last, g.now, g.th.job) {
			continue
		}
		unit := &structs.GarbageCollectRequest{Jobs: []structs.GCJob{{Namespace: job.Namespace, ID: job.ID, ModifyIndex: job.ModifyIndex}}}
		for _, a := range allocs {
			g.allocs[a.ID] = true
			unit.Allocs = append(unit.Allocs, a.ID)
		}
		for _, e := range evals {
			g.evals[e.ID] = true
			unit.Evals = append(unit.Evals, e.ID)
		}
		g.units = append(g.units, unit)
	}
	return nil
}

// allocCollectable reports whether an allocation is finished for good
// (structs.Allocation.Collectable, which the FSM checks again).
func allocCollectable(a *structs.Allocation) bool { return a.Collectable() }

func isBatchJob(job *structs.Job) bool {
	return job.Type == structs.JobTypeBatch || job.Type == structs.JobTypeSysBatch
}

// job returns what findGarbage knows of an allocation's or evaluation's
// job, reading it on first use.
func (g *garbage) job(namespace, id string) (*jobGC, error) {
	k := jobKeyGC{namespace, id}
	if j, ok := g.jobs[k]; ok {
		return j, nil
	}
	job, err := g.snap.JobByID(nil, namespace, id)
	if err != nil {
		return nil, err
	}
	allocs, err := g.snap.AllocsByJob(nil, namespace, id)
	if err != nil {
		return nil, err
	}
	j := &jobGC{job: job, newest: map[string]uint64{}}
	for _, a := range allocs {
		k := j.slot(a)
		j.newest[k] = max(j.newest[k], a.CreateIndex)
	}
	g.jobs[k] = j
	return j, nil
}

// findAllocs collects finished allocations of purged or stopped jobs,
// and replaced ones (the latest of each slot stays until its job goes).
func (g *garbage) findAllocs() error {
	allocs, err := g.snap.Allocs(nil, "*")
	if err != nil {
		return err
	}
	for _, a := range allocs {
		if g.allocs[a.ID] || !allocCollectable(a) || !olderThan(a.ModifyTime, g.now, g.th.eval) {
			continue
		}
		j, err := g.job(a.Namespace, a.JobID)
		if err != nil {
			return err
		}
		done := j.job == nil || j.job.Stop
		replaced := j.newest[j.slot(a)] > a.CreateIndex
		if done || replaced {
			g.addAlloc(a)
		}
	}
	return nil
}

// findEvals collects finished evaluations whose allocations are all
// collected, except those of live batch jobs (whose allocations show
// their results).
func (g *garbage) findEvals() error {
	evals, err := g.snap.Evals(nil, "*")
	if err != nil {
		return err
	}
	for _, e := range evals {
		if g.evals[e.ID] || !e.TerminalStatus() || !olderThan(e.ModifyTime, g.now, g.th.eval) {
			continue
		}
		j, err := g.job(e.Namespace, e.JobID)
		if err != nil {
			return err
		}
		if j.job != nil && isBatchJob(j.job) && !j.job.Stop && j.job.Status != structs.JobStatusDead {
			continue
		}
		allocs, err := g.snap.AllocsByEval(nil, e.ID)
		if err != nil {
			return err
		}
		all := true
		for _, a := range allocs {
			all = all && g.allocs[a.ID]
		}
		if all {
			g.addEval(e)
		}
	}
	return nil
}

// findNodes collects nodes down for th.node with no unfinished
// allocation.
func (g *garbage) findNodes() error {
	nodes, err := g.snap.Nodes(nil)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if !n.TerminalStatus() || !olderThan(n.StatusUpdatedAt, g.now, g.th.node) {
			continue
		}
		allocs, err := g.snap.AllocsByNode(nil, n.ID)
		if err != nil {
			return err
		}
		live := false
		for _, a := range allocs {
			live = live || !a.TerminalStatus()
		}
		if !live {
			g.req.Nodes = append(g.req.Nodes, structs.GCNode{ID: n.ID, ModifyIndex: n.ModifyIndex})
		}
	}
	return nil
}

// findTokens collects ACL tokens expired at least th.eval ago (at once
// in a forced collection): they can never be used again.
func (g *garbage) findTokens() error {
	tokens, err := g.snap.ACLTokens(nil, "")
	if err != nil {
		return err
	}
	for _, t := range tokens {
		if t.ExpirationTime != nil && t.IsExpired(g.now) && olderThan(t.ExpirationTime.UnixNano(), g.now, g.th.eval) {
			g.req.ACLTokens = append(g.req.ACLTokens, structs.GCNode{ID: t.AccessorID, ModifyIndex: t.ModifyIndex})
		}
	}
	return nil
}
