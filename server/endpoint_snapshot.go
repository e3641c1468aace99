package server

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/droverhq/drover/server/snapshot"
	"github.com/droverhq/drover/structs"
)

// Snapshot RPC methods. The archive travels whole in one message: a
// Drover state of tens of thousands of allocations is tens of MB.
const (
	RPCSnapshotSave    = "Snapshot.Save"
	RPCSnapshotRestore = structs.RPCSnapshotRestore // a request over structs.RPCMaxMessage
)

// SnapshotSaveRequest asks for an archive of the cluster's state. It is
// served by the leader (forwarded there), or by the server asked when
// AllowStale is set.
type SnapshotSaveRequest struct {
	structs.QueryOptions
}

// SnapshotSaveResponse carries the archive (snapshot package format).
type SnapshotSaveResponse struct {
	Archive []byte
	Meta    snapshot.Meta
	structs.QueryMeta
}

// SnapshotRestoreRequest replaces the cluster's state with Archive.
type SnapshotRestoreRequest struct {
	Archive []byte
	structs.WriteRequest
}

// SnapshotRestoreResponse describes the snapshot restored.
type SnapshotRestoreResponse struct {
	Meta snapshot.Meta
	structs.WriteMeta
}

// snapshotEndpoint serves the "Snapshot" RPC methods: `drover operator
// snapshot save` and `restore`.
type snapshotEndpoint struct{ srv *Server }

// Save answers an archive of the state: on the leader, after a barrier;
// on any server with AllowStale (its state may lag the leader's).
func (e *snapshotEndpoint) Save(args *SnapshotSaveRequest, reply *SnapshotSaveResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(RPCSnapshotSave, &err)
	if done, err := s.forward(RPCSnapshotSave, args, reply); done {
		return err
	}
	if err := s.requireManagement(args.AuthToken); err != nil {
		return err
	}
	var buf bytes.Buffer
	var meta *snapshot.Meta
	if args.AllowStale && !s.IsLeader() {
		meta, err = s.saveLocalSnapshot(&buf)
	} else {
		meta, err = s.saveSnapshot(&buf)
	}
	if err != nil {
		return err
	}
	reply.Archive = buf.Bytes()
	reply.Meta = *meta
	reply.Index = meta.Index
	s.setQueryMeta(&reply.QueryMeta)
	return nil
}

// Restore verifies the archive and restores it on the leader. A damaged
// archive is an invalid request and changes nothing.
func (e *snapshotEndpoint) Restore(args *SnapshotRestoreRequest, reply *SnapshotRestoreResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(RPCSnapshotRestore, &err)
	if done, err := s.forward(RPCSnapshotRestore, args, reply); done {
		return err
	}
	if err := s.requireManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.Archive) == 0 {
		return fmt.Errorf("restore snapshot: empty archive: %w", structs.ErrInvalid)
	}
	meta, err := s.restoreSnapshot(bytes.NewReader(args.Archive))
	if errors.Is(err, snapshot.ErrDamaged) {
		return fmt.Errorf("%w: %w", structs.ErrInvalid, err)
	}
	if err != nil {
		return err
	}
	reply.Meta = *meta
	reply.Index = s.raft.LastIndex()
	return nil
}
