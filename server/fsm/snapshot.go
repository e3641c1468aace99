package fsm

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// snapshotVersion is the format of Persist's stream; Restore refuses
// others.
const snapshotVersion = 1

// recordType is the byte before each object in a snapshot stream. Never
// renumber: snapshots outlive binaries.
type recordType byte

const (
	nodeRecord  recordType = 1
	jobRecord   recordType = 2
	evalRecord  recordType = 3
	allocRecord recordType = 4
	indexRecord recordType = 5
)

// snapshotHeader opens a snapshot stream.
type snapshotHeader struct {
	Version   int
	LastIndex uint64
}

// fsmSnapshot is a frozen state store waiting to be written out.
type fsmSnapshot struct {
	snap *state.StateSnapshot
}

var _ raft.FSMSnapshot = (*fsmSnapshot)(nil)

// Snapshot freezes the current state. It is quick; Persist does the
// writing.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	snap, err := f.State().Snapshot()
	if err != nil {
		return nil, fmt.Errorf("snapshot state: %w", err)
	}
	return &fsmSnapshot{snap: snap}, nil
}

// Persist writes a header, then each object as a record byte and its
// msgpack encoding.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.persist(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) persist(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := codec.NewEncoder(bw, structs.MsgpackHandle)
	latest, err := s.snap.LatestIndex()
	if err != nil {
		return err
	}
	if err := enc.Encode(&snapshotHeader{Version: snapshotVersion, LastIndex: latest}); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	rec := func(t recordType, obj any) error {
		if err := bw.WriteByte(byte(t)); err != nil {
			return err
		}
		return enc.Encode(obj)
	}
	for _, step := range []func(func(recordType, any) error) error{
		s.persistNodes, s.persistJobs, s.persistEvals, s.persistAllocs, s.persistIndexes,
		s.persistSchedulerConfig, s.persistNamespaces, s.persistReservations, s.persistQueues,
		s.persistACL, s.persistServiceRegistrations, s.persistPeriodicLaunches, s.persistVariables,
		s.persistJobVersions, s.persistDeployments,
	} {
		if err := step(rec); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func (s *fsmSnapshot) persistNodes(rec func(recordType, any) error) error {
	nodes, err := s.snap.Nodes(nil)
	if err != nil {
		return err
	}
	return writeAll(rec, nodeRecord, nodes)
}

func (s *fsmSnapshot) persistJobs(rec func(recordType, any) error) error {
	jobs, err := s.snap.Jobs(nil, "*")
	if err != nil {
		return err
	}
	return writeAll(rec, jobRecord, jobs)
}

func (s *fsmSnapshot) persistEvals(rec func(recordType, any) error) error {
	evals, err := s.snap.Evals(nil, "*")
	if err != nil {
		return err
	}
	return writeAll(rec, evalRecord, evals)
}

func (s *fsmSnapshot) persistAllocs(rec func(recordType, any) error) error {
	allocs, err := s.snap.Allocs(nil, "*")
	if err != nil {
		return err
	}
	return writeAll(rec, allocRecord, allocs)
}

func (s *fsmSnapshot) persistIndexes(rec func(recordType, any) error) error {
	indexes, err := s.snap.Indexes()
	if err != nil {
		return err
	}
	for table, index := range indexes {
		if err := rec(indexRecord, &state.IndexEntry{Key: table, Value: index}); err != nil {
			return fmt.Errorf("index %s: %w", table, err)
		}
	}
	return nil
}

func writeAll[T any](rec func(recordType, any) error, t recordType, objs []T) error {
	for _, o := range objs {
		if err := rec(t, o); err != nil {
			return fmt.Errorf("record %d: %w", t, err)
		}
	}
	return nil
}

// Release does nothing: the frozen state is garbage collected.
func (s *fsmSnapshot) Release() {}

// Restore replaces the state with a snapshot written by Persist. It
// builds a new store, swaps it in, and abandons the old one so that its
// blocking queries end.
//
// The snapshot does not say where in it capacity changed, so Restore
// reports a capacity change at the snapshot's last index: a blocked
// evaluation computed before then must be retried, or one whose unblock
// was lost with the old leader would wait for the next change forever.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	fresh, err := state.NewStateStore()
	if err != nil {
		return err
	}
	last, err := restoreInto(fresh, bufio.NewReader(rc))
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	f.mu.Lock()
	if f.events != nil {
		fresh.TrackChanges() // events.go
	}
	old := f.state
	f.state = fresh
	f.mu.Unlock()
	old.Abandon()
	f.capacityChanged(last)
	return nil
}

// restoreInto loads the stream into s and returns the header's last
// index.
func restoreInto(s *state.StateStore, r *bufio.Reader) (uint64, error) {
	// The decoder reads through r's ByteScanner without reading ahead, so
	// record bytes and objects can be interleaved on the same reader.
	dec := codec.NewDecoder(r, structs.RaftMsgpackHandle)
	var hdr snapshotHeader
	if err := dec.Decode(&hdr); err != nil {
		return 0, fmt.Errorf("header: %w", err)
	}
	if hdr.Version != snapshotVersion {
		return 0, fmt.Errorf("snapshot version %d, want %d", hdr.Version, snapshotVersion)
	}
	restore, err := s.Restore()
	if err != nil {
		return 0, err
	}
	defer restore.Abort()
	for {
		b, err := r.ReadByte()
		if errors.Is(err, io.EOF) {
			return hdr.LastIndex, restore.Commit()
		}
		if err != nil {
			return 0, err
		}
		if err := restoreRecord(restore, dec, recordType(b)); err != nil {
			return 0, err
		}
	}
}

func restoreRecord(r *state.StateRestore, dec *codec.Decoder, t recordType) error {
	switch t {
	case nodeRecord:
		var n structs.Node
		if err := dec.Decode(&n); err != nil {
			return fmt.Errorf("node: %w", err)
		}
		return r.NodeRestore(&n)
	case jobRecord:
		var j structs.Job
		if err := dec.Decode(&j); err != nil {
			return fmt.Errorf("job: %w", err)
		}
		return r.JobRestore(&j)
	case evalRecord:
		var e structs.Evaluation
		if err := dec.Decode(&e); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		return r.EvalRestore(&e)
	case allocRecord:
		var a structs.Allocation
		if err := dec.Decode(&a); err != nil {
			return fmt.Errorf("alloc: %w", err)
		}
		return r.AllocRestore(&a)
	case schedulerConfigRecord:
		return restoreSchedulerConfig(r, dec)
	case reservationRecord:
		return restoreReservation(r, dec)
	case queueRecord:
		return restoreQueue(r, dec)
	case serviceRegistrationRecord:
		return restoreServiceRegistration(r, dec)
	case periodicLaunchRecord:
		return restorePeriodicLaunch(r, dec)
	case aclPolicyRecord, aclTokenRecord:
		return restoreACLRecord(r, dec, t)
	case namespaceRecord, quotaRecord:
		return restoreNamespaceRecord(r, dec, t)
	case variableRecord, rootKeyMetaRecord:
		return restoreVariableRecord(r, dec, t)
	case jobVersionRecord:
		return restoreJobVersion(r, dec)
	case deploymentRecord:
		return restoreDeployment(r, dec)
	case indexRecord:
		var e state.IndexEntry
		if err := dec.Decode(&e); err != nil {
			return fmt.Errorf("index: %w", err)
		}
		return r.IndexRestore(e.Key, e.Value)
	default:
		return fmt.Errorf("unknown record type %d", t)
	}
}
