package server

import (
	"errors"
	"fmt"
	"path/filepath"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/droverhq/drover/boltfile"
)

// ErrRaftStoreDamaged: the server's Raft log (raft.db) is truncated or
// corrupt. The server refuses to start; the error says how to recover.
var ErrRaftStoreDamaged = errors.New("raft store damaged")

// raftRecovery is the recovery advice a damaged raft.db error carries.
const raftRecovery = "to recover, either restore the latest snapshot (`drover operator snapshot save` output) " +
	"into a fresh cluster with `drover operator snapshot restore`, or, in a cluster whose other servers are healthy, " +
	"stop this server, remove its server data dir (%s) and start it again to join as a fresh follower"

// openRaftStore opens the Raft log and stable store at path, after
// walking every page of an existing file once (bbolt's consistency
// check), so that a truncated or corrupt file is a clear error naming
// it and the recovery steps rather than a panic in bbolt, now or at
// the first read of a damaged page. The check costs one read of the
// file per start.
func openRaftStore(path string) (*raftboltdb.BoltStore, error) {
	if err := checkRaftStore(path); err != nil {
		return nil, err
	}
	store, err := newBoltStore(path)
	if err != nil {
		return nil, err
	}
	return store, nil
}

// damagedRaftStore wraps why raft.db at path is damaged.
func damagedRaftStore(path string, why any) error {
	return fmt.Errorf("%w: %s: %v; "+raftRecovery, ErrRaftStoreDamaged, path, why, serverDir(path))
}

// serverDir is the server's data dir, which holds raft/raft.db.
func serverDir(path string) string { return filepath.Dir(filepath.Dir(path)) }

// checkRaftStore checks an existing raft.db (package boltfile).
func checkRaftStore(path string) error {
	err := boltfile.Check(path)
	if errors.Is(err, boltfile.ErrDamaged) {
		return damagedRaftStore(path, err)
	}
	if err != nil {
		return fmt.Errorf("open raft log %s: %w", path, err)
	}
	return nil
}

// newBoltStore is raftboltdb.New with its panics (a page the check
// missed) turned into ErrRaftStoreDamaged.
func newBoltStore(path string) (store *raftboltdb.BoltStore, err error) {
	defer func() {
		if r := recover(); r != nil {
			store, err = nil, damagedRaftStore(path, fmt.Sprintf("bbolt panicked: %v", r))
		}
	}()
	store, err = raftboltdb.New(raftboltdb.Options{Path: path})
	if err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", path, err)
	}
	return store, nil
}
