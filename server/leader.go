package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/droverhq/drover/structs"
)

// barrierRetry is how long a new leader waits before retrying a failed
// barrier.
const barrierRetry = 500 * time.Millisecond

// monitorLeadership starts the leader's duties when this server gains
// leadership and stops them when it loses it or shuts down.
func (s *Server) monitorLeadership() {
	defer s.monitorWG.Done()
	s.followLeadership(s.raft.LeaderCh(), s.startLeading)
}

// followLeadership runs start's duties while leaderCh last said true,
// until shutdown. Raft's LeaderCh keeps only the latest value, so a true
// while already leading means leadership was lost and regained in
// between: the duties restart, with a fresh barrier, because entries
// another leader committed meanwhile may not be in the state they
// planned from.
func (s *Server) followLeadership(leaderCh <-chan bool, start func() (stop func())) {
	var stop func()
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		select {
		case <-s.shutdownCh:
			return
		case isLeader := <-leaderCh:
			switch {
			case isLeader && stop == nil:
				s.logger.Info("gained leadership")
				stop = start()
			case isLeader:
				s.logger.Warn("leadership lost and regained, restarting the leader's duties")
				stop()
				stop = start()
			case stop != nil:
				s.logger.Info("lost leadership")
				stop()
				stop = nil
			}
		case op := <-s.leaderOps:
			stop = s.runLeaderOp(op, stop, start)
		}
	}
}

// startLeading runs the leader loop in a goroutine and returns the
// function that stops it and waits for it.
func (s *Server) startLeading() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.leaderLoop(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// leaderLoop waits for the FSM to catch up, then runs the leader's duties
// until ctx ends, and tears them down.
func (s *Server) leaderLoop(ctx context.Context) {
	for {
		err := s.raft.Barrier(raftApplyTimeout).Error()
		if err == nil {
			break
		}
		s.logger.Error("leader barrier", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(barrierRetry):
		}
	}

	// Requests wait (forward) until the state has caught up: a new leader
	// that answered before its barrier could miss entries it applies next.
	s.readyTerm.Store(s.raft.CurrentTerm())
	s.leaderReady.Store(true)
	defer s.leaderReady.Store(false)
	s.broker.SetEnabled(true)
	s.blocked.SetEnabled(true)
	s.heartbeats.setEnabled(true)
	defer func() {
		s.heartbeats.setEnabled(false)
		s.blocked.SetEnabled(false)
		s.broker.SetEnabled(false)
	}()
	// Restored blocked evals older than the last capacity change go
	// straight to the broker.
	s.blocked.Unblock(s.notifier.capacityIndex.Load())
	if err := s.restoreEvals(); err != nil {
		s.logger.Error("restore evaluations", "error", err)
	}
	if err := s.initializeHeartbeats(); err != nil {
		s.logger.Error("initialize heartbeats", "error", err)
	}

	var wg sync.WaitGroup
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx)
		}()
	}
	run(s.applier.Run)
	run(s.reapHeartbeats)
	run(s.reapFailedEvals)
	run(s.reapCancelledEvals)
	run(s.watchReservationExpiry)
	run(s.reconcileMembers)
	run(s.runGC)
	run(s.runPeriodic)
	run(s.watchDeployments) // deployment_watcher.go
	for i := range s.config.NumSchedulers {
		w := &worker{srv: s, logger: s.logger.Named("worker").With("worker", i)}
		run(w.run)
	}
	<-ctx.Done()
	wg.Wait()
}

// restoreEvals fills the broker and the blocked evals from state.
func (s *Server) restoreEvals() error {
	evals, err := s.State().Evals(nil, "*")
	if err != nil {
		return err
	}
	var pending, blocked int
	for _, e := range evals {
		switch e.Status {
		case structs.EvalStatusPending:
			s.broker.Enqueue(e.Copy())
			pending++
		case structs.EvalStatusBlocked:
			s.blocked.Block(e.Copy())
			blocked++
		}
	}
	s.logger.Debug("restored evaluations", "pending", pending, "blocked", blocked)
	return nil
}

// reapFailedEvals marks failed the evaluations the broker gave up on,
// each with a follow-up that retries its job after failedEvalFollowUpWait
// (so a job is not left unreconciled by a passing fault).
func (s *Server) reapFailedEvals(ctx context.Context) {
	for {
		eval, err := s.broker.DequeueFailed(ctx)
		if err != nil {
			return
		}
		now := time.Now().UnixNano()
		followUp := &structs.Evaluation{
			ID: structs.GenerateUUID(), Namespace: eval.Namespace, Priority: eval.Priority, Type: eval.Type,
			TriggeredBy: evalTriggerFailedFollowUp, JobID: eval.JobID, JobModifyIndex: eval.JobModifyIndex,
			Status: structs.EvalStatusPending, Wait: failedEvalFollowUpWait, PreviousEval: eval.ID,
			CreateTime: now, ModifyTime: now,
		}
		e := eval.Copy()
		e.Status = structs.EvalStatusFailed
		e.StatusDescription = fmt.Sprintf("evaluation reached its delivery limit (%d)", evalDeliveryLimit)
		e.NextEval = followUp.ID
		e.ModifyTime = now
		if err := s.upsertEvals(e, followUp); err != nil {
			s.logger.Error("mark evaluation failed", "eval_id", e.ID, "error", err)
		}
	}
}

// reservationCheck is how often the leader looks for gang reservations
// that expired.
const reservationCheck = time.Second

// watchReservationExpiry wakes the blocked evaluations when a gang's
// reservation expires: the GPUs it held are free to them again, though no
// allocation changed.
func (s *Server) watchReservationExpiry(ctx context.Context) {
	var last time.Time // zero: reservations that expired before this leader count too
	ticker := time.NewTicker(reservationCheck)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			all, err := s.State().Reservations()
			if err != nil {
				s.logger.Warn("read reservations", "error", err)
				continue
			}
			for _, r := range all {
				if r.ExpireTime > last.UnixNano() && r.ExpireTime <= now.UnixNano() {
					// Past the latest index: an evaluation that blocked on
					// the reservation at that index must wake too.
					index, _ := s.State().LatestIndex()
					s.notifier.CapacityChanged(index + 1)
					break
				}
			}
			last = now
		}
	}
}

// reapCancelledEvals persists the blocked evaluations that newer ones
// superseded.
func (s *Server) reapCancelledEvals(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.blocked.CancelledCh():
		}
		evals := s.blocked.DrainCancelled()
		if len(evals) == 0 {
			continue
		}
		now := time.Now().UnixNano()
		for _, e := range evals {
			e.ModifyTime = now
		}
		if err := s.upsertEvals(evals...); err != nil {
			s.logger.Error("cancel superseded blocked evaluations", "count", len(evals), "error", err)
		}
	}
}

// upsertEvals writes evaluations through Raft.
func (s *Server) upsertEvals(evals ...*structs.Evaluation) error {
	_, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals})
	return err
}
