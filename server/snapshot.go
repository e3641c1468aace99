package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"

	"github.com/droverhq/drover/server/fsm"
	"github.com/droverhq/drover/server/snapshot"
	"github.com/droverhq/drover/structs"
)

// snapshotTimeout bounds how long a snapshot save or restore waits for
// Raft to take it in.
const snapshotTimeout = raftApplyTimeout

// saveSnapshot writes an archive of the leader's state to w: a barrier,
// so that the FSM holds every entry committed before the call, then a
// Raft user snapshot (which also compacts the log) streamed into the
// archive.
func (s *Server) saveSnapshot(w io.Writer) (*snapshot.Meta, error) {
	if !s.IsLeader() {
		return nil, structs.ErrNotLeader
	}
	if err := s.raft.Barrier(snapshotTimeout).Error(); err != nil {
		return nil, fmt.Errorf("save snapshot: barrier: %w", raftError(err))
	}
	return s.saveLocalSnapshot(w)
}

// saveLocalSnapshot writes an archive of this server's state, however
// far behind the leader it is, to w.
func (s *Server) saveLocalSnapshot(w io.Writer) (*snapshot.Meta, error) {
	future := s.raft.Snapshot()
	if err := future.Error(); err != nil {
		return nil, fmt.Errorf("save snapshot: %w", raftError(err))
	}
	rmeta, rc, err := future.Open()
	if err != nil {
		return nil, fmt.Errorf("save snapshot: open: %w", err)
	}
	defer rc.Close()
	meta := snapshot.Meta{
		ID: rmeta.ID, Index: rmeta.Index, Term: rmeta.Term,
		RaftVersion: int(rmeta.Version), Size: rmeta.Size,
	}
	if err := snapshot.Write(w, meta, rc); err != nil {
		return nil, fmt.Errorf("save snapshot: %w", err)
	}
	s.logger.Info("snapshot saved", "index", meta.Index, "term", meta.Term, "bytes", meta.Size)
	return &meta, nil
}

// restoreSnapshot replaces the cluster's state with the archive in r. It
// verifies the whole archive and decodes its state into a scratch store
// before it touches anything, so a damaged or unreadable file leaves the
// state as it was (Raft would crash the server on a snapshot its FSM
// cannot restore). The restore itself runs with the leader's duties
// stopped, which then start again from the restored state: evaluations,
// blocked evaluations and heartbeat timers come from the snapshot.
func (s *Server) restoreSnapshot(r io.Reader) (*snapshot.Meta, error) {
	if !s.IsLeader() {
		return nil, structs.ErrNotLeader
	}
	var state bytes.Buffer
	verified, err := snapshot.Read(r, &state)
	if err != nil {
		return nil, fmt.Errorf("restore snapshot: %w", err)
	}
	meta := verified.Meta
	if err := checkStateStream(state.Bytes()); err != nil {
		return nil, fmt.Errorf("restore snapshot: %w: %w", snapshot.ErrDamaged, err)
	}
	rmeta := &raft.SnapshotMeta{
		Version: raft.SnapshotVersion(meta.RaftVersion), ID: meta.ID,
		Index: meta.Index, Term: meta.Term, Size: meta.Size,
	}
	err = s.withLeaderDutiesStopped(func() error {
		if err := s.raft.Restore(rmeta, bytes.NewReader(state.Bytes()), snapshotTimeout); err != nil {
			return raftError(err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("restore snapshot: %w", err)
	}
	s.logger.Info("snapshot restored", "index", meta.Index, "term", meta.Term, "bytes", meta.Size)
	return &meta, nil
}

// checkStateStream restores the FSM stream into a scratch FSM.
func checkStateStream(state []byte) error {
	scratch, err := fsm.New(nil, nil)
	if err != nil {
		return err
	}
	return scratch.Restore(io.NopCloser(bytes.NewReader(state)))
}

// raftError maps Raft's leadership and shutdown errors to the sentinels
// the RPC layer and the HTTP API understand.
func raftError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("%w (%v)", structs.ErrNotLeader, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return structs.ErrShuttingDown
	}
	return err
}

// leaderOp is work that must run while the leader's duties are stopped.
type leaderOp struct {
	fn   func() error
	done chan error // buffered: the monitor never blocks on it
}

// withLeaderDutiesStopped has the leadership monitor stop the leader's
// duties, run fn, and start them again (when this server still leads).
// It returns fn's error, or ErrNotLeader when this server does not lead.
func (s *Server) withLeaderDutiesStopped(fn func() error) error {
	op := leaderOp{fn: fn, done: make(chan error, 1)}
	select {
	case s.leaderOps <- op:
	case <-s.shutdownCh:
		return structs.ErrShuttingDown
	}
	return <-op.done
}

// runLeaderOp runs op for followLeadership: stop is the running duties'
// stop function (nil when not leading) and the result replaces it.
func (s *Server) runLeaderOp(op leaderOp, stop func(), start func() (stop func())) func() {
	if stop == nil {
		op.done <- structs.ErrNotLeader
		return nil
	}
	stop()
	op.done <- op.fn()
	if !s.IsLeader() {
		// The monitor's next leaderCh value says so again, or that
		// leadership came back, which starts the duties.
		return nil
	}
	s.logger.Info("restarting the leader's duties")
	return start()
}
