// Package state is the client's on-disk memory: a BoltDB file that keeps,
// for every allocation the client runs, the allocation itself, each
// task's TaskState and each running task's driver handle, so that an
// agent restarted after a crash (or SIGKILL) can re-attach to the tasks
// it left running instead of starting them again.
//
// It stores and loads; it must not decide what to restore or talk to
// drivers or servers (package client and the alloc runner do that).
//
// Layout: one top-level bucket "allocs" with one bucket per allocation
// ID; inside it the key "alloc" holds the allocation and the nested
// buckets "task_states" and "task_handles" hold one key per task name.
// Values are msgpack, the codec of Drover's RPC.
package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/droverhq/drover/boltfile"
	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

var (
	allocsBucket  = []byte("allocs")
	allocKey      = []byte("alloc")
	statesBucket  = []byte("task_states")
	handlesBucket = []byte("task_handles")
)

// ErrUnknownAlloc: a task's state or handle was put for an allocation
// that was never put (or was deleted).
var ErrUnknownAlloc = errors.New("state: unknown allocation")

// DB is an open client state file. Methods are safe for concurrent use.
type DB struct {
	bolt *bolt.DB
}

// Alloc is one allocation as stored, with its tasks' states and the
// handles of the tasks that were running.
type Alloc struct {
	Alloc       *structs.Allocation
	TaskStates  map[string]*structs.TaskState
	TaskHandles map[string]*drivers.TaskHandle
}

// Path returns the state file of a client data dir.
func Path(dataDir string) string { return filepath.Join(dataDir, "client", "state.db") }

// ErrDamaged: the state file cannot be trusted (empty, truncated, not a
// BoltDB file, or failing its consistency check). The caller moves it
// aside (MoveAside) and opens a fresh one.
var ErrDamaged = errors.New("state: damaged state file")

// Open opens (creating it and its directory if needed) the state file at
// path. A second Open of the same file waits up to a second for the
// first to close it, then fails. An existing file that is empty or fails
// to open or to pass bbolt's consistency check gives an error wrapping
// ErrDamaged; bbolt's panics on corrupt pages are turned into that error.
func Open(path string) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	b, err := openChecked(path)
	if err != nil {
		return nil, err
	}
	err = b.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(allocsBucket)
		return err
	})
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("state: init %s: %w", path, err)
	}
	return &DB{bolt: b}, nil
}

// openChecked checks path (package boltfile: empty, truncated, corrupt)
// and opens it; bbolt's panics become ErrDamaged.
func openChecked(path string) (b *bolt.DB, err error) {
	switch err := boltfile.Check(path); {
	case errors.Is(err, boltfile.ErrDamaged):
		return nil, fmt.Errorf("%w: %v", ErrDamaged, err)
	case err != nil:
		return nil, fmt.Errorf("state: open %s: %w", path, err)
	}
	defer func() {
		if r := recover(); r != nil {
			if b != nil {
				_ = closeQuietly(b)
				b = nil
			}
			err = fmt.Errorf("%w: %s: bbolt panicked: %v", ErrDamaged, path, r)
		}
	}()
	b, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("state: open %s: %w", path, err) // in use, not damaged
	}
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %v", ErrDamaged, path, err)
	}
	return b, nil
}

// closeQuietly closes a DB that may itself panic on close.
func closeQuietly(b *bolt.DB) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("close: %v", r)
		}
	}()
	return b.Close()
}

// MoveAside renames a damaged state file to
// <path>.damaged-<UTC timestamp> (now, to the second) and returns the
// new path, so the next Open starts a fresh file and the old one stays
// for inspection.
func MoveAside(path string, now time.Time) (string, error) {
	aside := path + ".damaged-" + now.UTC().Format("20060102T150405Z")
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("state: move aside %s: %w", path, err)
	}
	return aside, nil
}

// Close closes the file.
func (db *DB) Close() error { return db.bolt.Close() }

// PutAlloc stores (or replaces) an allocation, keeping its tasks' states
// and handles.
func (db *DB) PutAlloc(a *structs.Allocation) error {
	if a == nil || a.ID == "" {
		return errors.New("state: put alloc: missing allocation ID")
	}
	buf, err := encode(a)
	if err != nil {
		return fmt.Errorf("state: put alloc %s: %w", a.ID, err)
	}
	return db.bolt.Update(func(tx *bolt.Tx) error {
		ab, err := tx.Bucket(allocsBucket).CreateBucketIfNotExists([]byte(a.ID))
		if err != nil {
			return fmt.Errorf("state: put alloc %s: %w", a.ID, err)
		}
		return ab.Put(allocKey, buf)
	})
}

// PutTaskState stores a task's state.
func (db *DB) PutTaskState(allocID, task string, s *structs.TaskState) error {
	return db.putTask(allocID, statesBucket, task, s)
}

// PutTaskHandle stores the handle of a task's running attempt; nil
// deletes it (the attempt ended).
func (db *DB) PutTaskHandle(allocID, task string, h *drivers.TaskHandle) error {
	if h == nil {
		return db.putTask(allocID, handlesBucket, task, nil)
	}
	return db.putTask(allocID, handlesBucket, task, h)
}

func (db *DB) putTask(allocID string, bucket []byte, task string, v any) error {
	var buf []byte
	if v != nil {
		var err error
		if buf, err = encode(v); err != nil {
			return fmt.Errorf("state: put %s of %s/%s: %w", bucket, allocID, task, err)
		}
	}
	return db.bolt.Update(func(tx *bolt.Tx) error {
		ab := tx.Bucket(allocsBucket).Bucket([]byte(allocID))
		if ab == nil {
			return fmt.Errorf("put %s of %s/%s: %w", bucket, allocID, task, ErrUnknownAlloc)
		}
		tb, err := ab.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		if buf == nil {
			return tb.Delete([]byte(task))
		}
		return tb.Put([]byte(task), buf)
	})
}

// DeleteAlloc forgets an allocation and everything stored under it.
// Deleting an unknown allocation is not an error.
func (db *DB) DeleteAlloc(allocID string) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		err := tx.Bucket(allocsBucket).DeleteBucket([]byte(allocID))
		if errors.Is(err, bolterrors.ErrBucketNotFound) {
			return nil
		}
		return err
	})
}

// GetAllocs returns every stored allocation. An entry that cannot be
// decoded is reported in errs (keyed by allocation ID) and left out.
func (db *DB) GetAllocs() (allocs []*Alloc, errs map[string]error, err error) {
	defer func() {
		if r := recover(); r != nil { // a corrupt page Open's check missed
			allocs, errs, err = nil, nil, fmt.Errorf("state: get allocs: %w: bbolt panicked: %v", ErrDamaged, r)
		}
	}()
	errs = map[string]error{}
	err = db.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(allocsBucket).ForEachBucket(func(id []byte) error {
			a, err := readAlloc(tx.Bucket(allocsBucket).Bucket(id))
			if err != nil {
				errs[string(id)] = err
				return nil
			}
			allocs = append(allocs, a)
			return nil
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("state: get allocs: %w", err)
	}
	return allocs, errs, nil
}

func readAlloc(ab *bolt.Bucket) (*Alloc, error) {
	out := &Alloc{TaskStates: map[string]*structs.TaskState{}, TaskHandles: map[string]*drivers.TaskHandle{}}
	buf := ab.Get(allocKey)
	if buf == nil {
		return nil, errors.New("no allocation stored")
	}
	if err := structs.Decode(buf, &out.Alloc); err != nil {
		return nil, fmt.Errorf("decode allocation: %w", err)
	}
	if b := ab.Bucket(statesBucket); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			var s structs.TaskState
			if err := structs.Decode(v, &s); err != nil {
				return fmt.Errorf("decode state of task %s: %w", k, err)
			}
			out.TaskStates[string(k)] = &s
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if b := ab.Bucket(handlesBucket); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			var h drivers.TaskHandle
			if err := structs.Decode(v, &h); err != nil {
				return fmt.Errorf("decode handle of task %s: %w", k, err)
			}
			out.TaskHandles[string(k)] = &h
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// encode is msgpack without the message-type byte structs.Encode adds.
func encode(v any) ([]byte, error) {
	buf, err := structs.Encode(0, v)
	if err != nil {
		return nil, err
	}
	return buf[1:], nil
}
