package server

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/droverhq/drover/structs"
)

// Forwarding timings.
const (
	// DefaultRPCHoldTimeout is how long a request waits for a leader
	// (through an election) before it fails.
	DefaultRPCHoldTimeout = 5 * time.Second
	// forwardTimeout bounds one forwarded call (beyond a blocking
	// query's wait): a leader cut off from this server must not hold
	// the request past the point where another attempt could succeed.
	forwardTimeout = 10 * time.Second
	// forwardDialTimeout bounds connecting to the leader.
	forwardDialTimeout = 2 * time.Second
	// retryBackoffMin and retryBackoffMax bound the wait between two
	// attempts while there is no leader.
	retryBackoffMin = 20 * time.Millisecond
	retryBackoffMax = 250 * time.Millisecond
)

// idempotentWrites are the write methods that are sent again when an
// attempt's outcome is unknown (the leader failed after it got the
// request): applying one twice leaves the state it leaves once. Other
// writes fail with structs.ErrOutcomeUnknown instead, so that a caller
// is never told "done" for a write that was lost, nor applies twice
// what must apply once. An endpoint added to this map must be
// idempotent in that sense.
var idempotentWrites = map[string]bool{
	structs.RPCJobRegister:      true, // an unchanged spec keeps its version (unless check-and-set)
	structs.RPCJobScale:         true, // sets a count; re-reads the job (unless check-and-set)
	structs.RPCJobPlan:          true, // a dry run
	structs.RPCNodeRegister:     true,
	structs.RPCNodeUpdateStatus: true,
	structs.RPCNodeUpdateAlloc:  true, // client state is last-writer-wins
}

// forward sends a request that this server must not serve itself to
// the leader, and reports whether it did (then err is the answer). A
// write, or a read that does not allow a stale answer, is served by the
// leader only; a request that is neither (no structs.RPCInfo) or a stale
// read is served locally. Endpoints start with:
//
//	if done, err := s.forward(method, args, reply); done {
//		return err
//	}
//
// While there is no leader, or the one this server knows answers that it
// no longer leads, the request waits with backoff and tries again, for
// up to Config.RPCHoldTimeout from the first failure (an attempt started
// within it may take its own timeout); then it fails with
// structs.ErrNoLeader. An attempt whose outcome is unknown is tried
// again only for reads and idempotentWrites.
func (s *Server) forward(method string, args, reply any) (bool, error) {
	info, ok := args.(structs.RPCInfo)
	if !ok || (info.IsRead() && info.AllowStaleRead()) {
		return false, nil
	}
	hold := holdTimer{hold: s.config.RPCHoldTimeout}
	var last error
	for {
		switch {
		case s.leading():
			return false, nil
		case s.IsLeader():
			// Elected, state not caught up yet: wait below.
		default:
			if leader := s.Leader(); leader != "" && leader != s.advertise.String() {
				err := s.pool.call(leader, callTimeout(args), method, args, reply)
				if err == nil {
					return true, nil
				}
				if !retryable(method, info, classify(err)) {
					return true, forwardError(method, leader, err)
				}
				last = fmt.Errorf("leader %s: %w", leader, err)
				resetReply(reply)
			}
		}
		wait, ok := hold.next()
		if !ok {
			return true, noLeaderError(method, s.config.RPCHoldTimeout, last)
		}
		if !s.backoff(wait) {
			return true, fmt.Errorf("%s: %w", method, structs.ErrShuttingDown)
		}
	}
}

// holdTimer paces the retries of one request: exponential backoff from
// retryBackoffMin to retryBackoffMax, for up to hold after the first
// retry (so that a blocking query that ran long before it failed still
// gets its retries).
type holdTimer struct {
	hold     time.Duration
	deadline time.Time
	backoff  time.Duration
}

// next returns how long to wait before the next attempt, or false when
// the hold is over.
func (h *holdTimer) next() (time.Duration, bool) {
	now := time.Now()
	if h.deadline.IsZero() {
		h.deadline = now.Add(h.hold)
		h.backoff = retryBackoffMin
	}
	if !now.Before(h.deadline) {
		return 0, false
	}
	wait := min(h.backoff, h.deadline.Sub(now))
	h.backoff = min(h.backoff*2, retryBackoffMax)
	return wait, true
}

// retryLocal runs call, which serves method in process, again while it
// fails because this server lost its leadership under it, within
// Config.RPCHoldTimeout: the next attempt forwards to the new leader.
// What forward sent it has already retried; its final "no leader" is
// final here too.
func (s *Server) retryLocal(method string, args, reply any, call func() error) error {
	info, _ := args.(structs.RPCInfo)
	hold := holdTimer{hold: s.config.RPCHoldTimeout}
	for {
		err := call()
		if err == nil || info == nil || errors.Is(err, errHoldExpired) || !retryable(method, info, classify(err)) {
			return err
		}
		wait, ok := hold.next()
		if !ok || !s.backoff(wait) {
			return err
		}
		resetReply(reply)
	}
}

// outcome is what a failed attempt says about the request.
type outcome int

const (
	// outcomeAnswered: the endpoint answered (its error is the answer).
	outcomeAnswered outcome = iota
	// outcomeNotApplied: no leader took the request (none known, the one
	// asked no longer leads, or the request never left this server).
	outcomeNotApplied
	// outcomeUnknown: a leader took it but no answer came back (it lost
	// its leadership while committing, or the connection broke).
	outcomeUnknown
)

// classify reads a failed attempt's error by its sentinel, which
// survives the wire (structs.RemoteError). raftApply reports raft's
// "leadership lost while committing" as ErrOutcomeUnknown: that write may
// still commit. So may one whose remote leader answered "shutting down".
func classify(err error) outcome {
	remote := structs.IsRemote(err)
	switch {
	case !remote && errors.Is(err, structs.ErrShuttingDown):
		return outcomeAnswered // this server is shutting down: stop
	case errors.Is(err, errNoAnswer), errors.Is(err, structs.ErrOutcomeUnknown),
		remote && errors.Is(err, structs.ErrShuttingDown): // the leader stopped under it
		return outcomeUnknown
	case errors.Is(err, errNotSent), errors.Is(err, structs.ErrNoLeader), errors.Is(err, structs.ErrNotLeader):
		return outcomeNotApplied
	}
	return outcomeAnswered
}

// retryable reports whether an attempt with outcome o may be repeated:
// one nobody applied always, one of unknown outcome only when applying
// it twice is harmless (a read or one of idempotentWrites).
func retryable(method string, info structs.RPCInfo, o outcome) bool {
	switch o {
	case outcomeNotApplied:
		return true
	case outcomeUnknown:
		return info.IsRead() || (idempotentWrites[method] && !checkAndSet(info))
	}
	return false
}

// checkAndSet reports whether a write applies only at an index: sent
// again after it applied, it would report a conflict it did not have.
func checkAndSet(args any) bool {
	switch a := args.(type) {
	case *structs.JobRegisterRequest:
		return a.EnforceIndex
	case *structs.JobScaleRequest:
		return a.EnforceIndex
	}
	return false
}

// forwardError is the error a caller gets for a forwarded request that
// is not tried again: the leader's own answer as it is, an unknown
// outcome as structs.ErrOutcomeUnknown.
func forwardError(method, leader string, err error) error {
	if classify(err) != outcomeUnknown || errors.Is(err, structs.ErrOutcomeUnknown) {
		return err
	}
	return fmt.Errorf("%s forwarded to leader %s: %w (%v)", method, leader, structs.ErrOutcomeUnknown, err)
}

// errHoldExpired marks forward's "no leader" after Config.RPCHoldTimeout,
// which retryLocal must not wait out a second time.
var errHoldExpired = errors.New("hold timeout expired")

func noLeaderError(method string, hold time.Duration, last error) error {
	err := fmt.Errorf("%s: %w (%w: waited %s)", method, structs.ErrNoLeader, errHoldExpired, hold)
	if last != nil {
		err = fmt.Errorf("%w; last attempt: %v", err, last)
	}
	return err
}

// callTimeout is how long one forwarded attempt may take: a blocking
// query's wait on top of forwardTimeout.
func callTimeout(args any) time.Duration {
	q, ok := args.(interface {
		QueryWait() (blocking bool, wait time.Duration)
	})
	if !ok {
		return forwardTimeout
	}
	blocking, wait := q.QueryWait()
	switch {
	case !blocking:
		return forwardTimeout
	case wait <= 0 || wait > maxQueryTime:
		wait = maxQueryTime
	}
	return forwardTimeout + wait
}

// resetReply zeroes *reply before another attempt decodes into it, so
// nothing of a failed attempt's answer survives.
func resetReply(reply any) {
	v := reflect.ValueOf(reply)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v.Elem().SetZero()
	}
}

// backoff waits d; it reports false if the server shut down first.
func (s *Server) backoff(d time.Duration) bool {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.shutdownCh:
		return false
	}
}

// setQueryMeta fills what a read reports about this server's view: its
// contact with the leader, and whether it knows one.
func (s *Server) setQueryMeta(m *structs.QueryMeta) {
	m.LastContact = s.LastContact()
	m.KnownLeader = s.IsLeader() || s.Leader() != ""
}

// leading reports whether this server leads with its state caught up:
// the leader's barrier ran in the current term (a leadership lost and
// regained since needs a new one).
func (s *Server) leading() bool {
	return s.IsLeader() && s.leaderReady.Load() && s.readyTerm.Load() == s.raft.CurrentTerm()
}

// ReadBarrier returns once this server's state holds every write that
// was acknowledged before the call, so that a read from it is as fresh
// as one from the leader. The leader returns at once (as it serves
// reads from its own state); a follower asks the leader for its latest
// index (Status.ReadIndex, forwarded, waiting through an election) and
// waits until its own state reaches it, within Config.RPCHoldTimeout.
func (s *Server) ReadBarrier(ctx context.Context) error {
	if s.leading() {
		// Still the leader (a quorum says so), state caught up.
		if err := s.raft.VerifyLeader().Error(); err == nil {
			return nil
		}
	}
	var resp structs.ReadIndexResponse
	if err := s.RPC(structs.RPCStatusReadIndex, &structs.ReadIndexRequest{}, &resp); err != nil {
		return fmt.Errorf("consistent read: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.config.RPCHoldTimeout)
	defer cancel()
	backoff := time.Millisecond
	for {
		latest, err := s.State().LatestIndex()
		if err != nil {
			return fmt.Errorf("consistent read: %w", err)
		}
		if latest >= resp.Index {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("consistent read: state at index %d, leader at %d: %w", latest, resp.Index, ctx.Err())
		case <-s.shutdownCh:
			return fmt.Errorf("consistent read: %w", structs.ErrShuttingDown)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 50*time.Millisecond)
	}
}
