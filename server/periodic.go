package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// The periodic dispatcher runs on the leader: it tracks every active
// periodic job (structs.Job.IsPeriodicActive) and at each launch time
// registers a child job `<parent>/periodic-<unix seconds>` through the
// ordinary registration (Raft, with an evaluation).
//
// A launch is never applied twice, on this leader or the next: the child
// is registered check-and-set "must not exist" (EnforceIndex with index
// 0), and its ID is a function of the launch time. Each launch is then
// recorded in the periodic_launch table (Nomad's); when a parent is first
// tracked its last launch is read back from that record and from its
// children, so a new leader resumes from where the old one stopped (even
// once the children are garbage collected), launching a missed launch
// once.

// PeriodicClock is the time the periodic dispatcher launches by; tests
// inject a fake one (Config.PeriodicClock).
type PeriodicClock interface {
	Now() time.Time
	// At returns a channel that receives once the time is t (at once
	// when it is past). An absolute time, so that a clock moving between
	// Now and At does not push the wake-up later.
	At(t time.Time) <-chan time.Time
}

// wallClock is the PeriodicClock of time.Now.
type wallClock struct{}

func (wallClock) Now() time.Time                  { return time.Now() }
func (wallClock) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }

// periodicKey names a parent job.
type periodicKey struct{ namespace, id string }

// periodicEntry is a tracked parent: the registration its next launch
// was computed from, and that launch.
type periodicEntry struct {
	jobModifyIndex uint64
	next           time.Time
}

// periodicLaunch is one launch due.
type periodicLaunch struct {
	job    *structs.Job
	launch time.Time
}

// periodicTracker is the dispatcher's pure core: which parents are due
// at a time, and when it must look again. It does no I/O.
type periodicTracker struct {
	entries map[periodicKey]periodicEntry
}

func newPeriodicTracker() *periodicTracker {
	return &periodicTracker{entries: map[periodicKey]periodicEntry{}}
}

// step brings the tracked set to parents (those not active are dropped)
// and returns the launches due at now, advancing each past now, and the
// earliest next launch (zero when there is none). lastLaunch gives a
// newly tracked (or re-registered) parent's last launch in state (zero:
// none); its next launch follows the later of that and its submit time.
func (t *periodicTracker) step(parents []*structs.Job, lastLaunch func(*structs.Job) time.Time, now time.Time) (due []periodicLaunch, wake time.Time) {
	seen := make(map[periodicKey]bool, len(parents))
	for _, job := range parents {
		if !job.IsPeriodicActive() {
			continue
		}
		key := periodicKey{job.Namespace, job.ID}
		seen[key] = true
		e, ok := t.entries[key]
		if !ok || e.jobModifyIndex != job.JobModifyIndex {
			base := time.Unix(0, job.SubmitTime)
			// A launch after now is no launch (a job registered with a
			// child's ID by hand, say): it must not push the schedule away.
			if last := lastLaunch(job); last.After(base) && !last.After(now) {
				base = last
			}
			next, err := job.Periodic.Next(base)
			if err != nil {
				next = time.Time{} // validated at register; a bad spec never launches
			}
			e = periodicEntry{jobModifyIndex: job.JobModifyIndex, next: next}
		}
		if !e.next.IsZero() && !e.next.After(now) {
			due = append(due, periodicLaunch{job: job, launch: e.next})
			after := now
			if e.next.After(after) {
				after = e.next
			}
			e.next, _ = job.Periodic.Next(after)
		}
		t.entries[key] = e
		if !e.next.IsZero() && (wake.IsZero() || e.next.Before(wake)) {
			wake = e.next
		}
	}
	for key := range t.entries {
		if !seen[key] {
			delete(t.entries, key)
		}
	}
	return due, wake
}

// periodicIdleWait is how long the dispatcher sleeps with nothing
// tracked, between looks that a state change did not prompt.
const periodicIdleWait = time.Minute

// runPeriodic is the leader's periodic dispatcher: it looks at the jobs
// whenever they change or a launch is due, until ctx ends.
func (s *Server) runPeriodic(ctx context.Context) {
	clock := s.periodicClock()
	tracker := newPeriodicTracker()
	for {
		ws := memdb.NewWatchSet()
		store := s.State()
		ws.Add(store.AbandonCh()) // a snapshot restore replaces the store
		now := clock.Now()
		wake := now.Add(periodicIdleWait)
		jobs, err := store.Jobs(ws, "*")
		if err != nil {
			s.logger.Error("periodic dispatcher: list jobs", "error", err)
		} else {
			var due []periodicLaunch
			due, wake = tracker.step(jobs, s.lastPeriodicLaunch, now)
			s.logger.Trace("periodic dispatcher", "tracked", len(tracker.entries), "due", len(due), "now", now, "wake", wake)
			for _, d := range due {
				s.maybeLaunchPeriodic(d)
			}
			if wake.IsZero() {
				wake = now.Add(periodicIdleWait)
			}
		}
		timer := clock.At(wake)
		watchCtx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-timer:
			case <-watchCtx.Done():
				return
			}
			cancel()
		}()
		_ = ws.WatchCtx(watchCtx) // a change, the timer or the end of leadership
		cancel()
		if ctx.Err() != nil {
			return
		}
	}
}

// periodicClock is the configured clock, else the wall clock.
func (s *Server) periodicClock() PeriodicClock {
	if s.config.PeriodicClock != nil {
		return s.config.PeriodicClock
	}
	return wallClock{}
}

// periodicChildren returns the periodic children of parent in state.
func (s *Server) periodicChildren(parent *structs.Job) ([]*structs.Job, error) {
	jobs, err := s.State().JobsByIDPrefix(nil, parent.Namespace, parent.ID+structs.PeriodicLaunchSuffix)
	if err != nil {
		return nil, fmt.Errorf("children of %q: %w", parent.ID, err)
	}
	out := jobs[:0]
	for _, j := range jobs {
		if j.ParentID == parent.ID {
			out = append(out, j)
		}
	}
	return out, nil
}

// lastPeriodicLaunch is parent's last launch in state: the later of its
// periodic_launch record and its latest child's launch (zero: none).
func (s *Server) lastPeriodicLaunch(parent *structs.Job) time.Time {
	var last time.Time
	rec, err := s.State().PeriodicLaunchByID(nil, parent.Namespace, parent.ID)
	if err != nil {
		s.logger.Error("periodic dispatcher", "error", err)
	} else if rec != nil {
		last = rec.Launch
	}
	children, err := s.periodicChildren(parent)
	if err != nil {
		s.logger.Error("periodic dispatcher", "error", err)
		return last
	}
	for _, c := range children {
		if t, ok := structs.PeriodicLaunchTime(parent.ID, c.ID); ok && t.After(last) {
			last = t
		}
	}
	return last
}

// maybeLaunchPeriodic launches d unless the parent prohibits overlap and
// a previous child still runs.
func (s *Server) maybeLaunchPeriodic(d periodicLaunch) {
	log := s.logger.With("namespace", d.job.Namespace, "job_id", d.job.ID, "launch", d.launch.UTC())
	if d.job.Periodic.ProhibitOverlap {
		children, err := s.periodicChildren(d.job)
		if err != nil {
			log.Error("periodic launch", "error", err)
			return
		}
		for _, c := range children {
			if c.Status != structs.JobStatusDead {
				log.Debug("periodic launch skipped: prohibit_overlap and a previous child is not dead", "child", c.ID)
				return
			}
		}
	}
	reply, err := s.launchPeriodic(d.job, d.launch)
	switch {
	case errors.Is(err, structs.ErrConflict):
		log.Debug("periodic launch already made")
	case err != nil:
		log.Error("periodic launch", "error", err)
	default:
		log.Info("periodic launch", "eval_id", reply.EvalID)
	}
}

// launchPeriodic registers parent's child for launch, once: a child of
// that launch already in state is refused with structs.ErrConflict.
func (s *Server) launchPeriodic(parent *structs.Job, launch time.Time) (*structs.JobRegisterResponse, error) {
	child := parent.DeriveChild(structs.PeriodicChildID(parent.ID, launch))
	child.SubmitTime = 0
	args := &structs.JobRegisterRequest{
		Job: child, EnforceIndex: true,
		WriteRequest: structs.WriteRequest{Region: parent.Region, Namespace: parent.Namespace},
	}
	var reply structs.JobRegisterResponse
	if err := s.registerJob(args, &reply); err != nil {
		return nil, fmt.Errorf("launch %q: %w", child.ID, err)
	}
	// Recorded after the child: a leader lost in between leaves the
	// child, which the next one reads as the last launch too.
	rec := &structs.PeriodicLaunchUpsertRequest{
		Launch:       &structs.PeriodicLaunch{Namespace: parent.Namespace, ID: parent.ID, Launch: launch},
		WriteRequest: args.WriteRequest,
	}
	if _, err := s.raftApply(structs.PeriodicLaunchUpsertRequestType, rec); err != nil {
		s.logger.Warn("record periodic launch", "job_id", parent.ID, "error", err)
	}
	return &reply, nil
}
