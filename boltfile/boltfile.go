// Package boltfile checks a BoltDB file before it is opened for use, so
// that a file left empty, truncated or corrupt by a crash or a full disk
// is an error (ErrDamaged) instead of a panic or a SIGBUS in bbolt. The
// client's state store and the servers' Raft log both call Check.
//
// It reads and checks; it must not repair, move or delete files: what
// to do with a damaged file is its caller's decision.
package boltfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// ErrDamaged: the file is empty, truncated, not a BoltDB file, or fails
// bbolt's consistency check.
var ErrDamaged = errors.New("damaged bolt file")

// ErrInUse: another process (or DB in this one) holds the file open.
var ErrInUse = errors.New("bolt file in use")

// bbolt's meta page: a 16-byte page header, then magic, version, page
// size, flags, root bucket (16 bytes), freelist, high-water page ID,
// txid and an FNV-64a checksum of the fields before it.
const (
	pageHeaderSize = 16
	metaSize       = 64
	magic          = 0xED0CDAED
	version        = 2
)

type meta struct {
	pageSize             uint32
	root, freelist, pgid uint64
	txid                 uint64
}

// Check checks the file at path; a missing file is fine (it will be
// created). It walks every page once, so it costs one read of the file.
func Check(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	m, err := readMeta(f)
	f.Close()
	if fi.Size() == 0 {
		return fmt.Errorf("%w: %s is empty", ErrDamaged, path)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrDamaged, path, err)
	}
	if need := int64(m.pgid) * int64(m.pageSize); fi.Size() < need {
		return fmt.Errorf("%w: %s is truncated: %d bytes, its pages need %d", ErrDamaged, path, fi.Size(), need)
	}
	if m.root >= m.pgid || (m.freelist >= m.pgid && m.freelist != ^uint64(0)) {
		return fmt.Errorf("%w: %s: meta page points past the end of the file", ErrDamaged, path)
	}
	return walk(path)
}

// readMeta returns the newest valid meta page, as bbolt picks it.
func readMeta(f io.ReaderAt) (*meta, error) {
	var best *meta
	var errs []string
	for _, off := range []int64{0, 4096, 8192, 16384, 65536} {
		buf := make([]byte, pageHeaderSize+metaSize)
		if _, err := f.ReadAt(buf, off); err != nil {
			errs = append(errs, fmt.Sprintf("meta at %d: %v", off, err))
			continue
		}
		m, err := parseMeta(buf[pageHeaderSize:])
		if err != nil {
			errs = append(errs, fmt.Sprintf("meta at %d: %v", off, err))
			continue
		}
		if off != 0 && int64(m.pageSize) != off {
			continue // a page that happens to parse, not meta 1
		}
		if best == nil || m.txid > best.txid {
			best = m
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no valid meta page (%s)", strings.Join(errs, "; "))
	}
	return best, nil
}

func parseMeta(b []byte) (*meta, error) {
	le := binary.LittleEndian
	if le.Uint32(b[0:]) != magic {
		return nil, errors.New("bad magic")
	}
	if le.Uint32(b[4:]) != version {
		return nil, errors.New("bad version")
	}
	h := fnv.New64a()
	_, _ = h.Write(b[:56])
	if h.Sum64() != le.Uint64(b[56:]) {
		return nil, errors.New("bad checksum")
	}
	m := &meta{pageSize: le.Uint32(b[8:]), root: le.Uint64(b[16:]), freelist: le.Uint64(b[32:]), pgid: le.Uint64(b[40:]), txid: le.Uint64(b[48:])}
	if m.pageSize < 512 || m.pageSize&(m.pageSize-1) != 0 {
		return nil, fmt.Errorf("bad page size %d", m.pageSize)
	}
	return m, nil
}

// walk opens the file read-only and runs bbolt's consistency check;
// bbolt's panics (it has some on corrupt pages) become ErrDamaged.
func walk(path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: bbolt panicked: %v", ErrDamaged, path, r)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return fmt.Errorf("%w: %s", ErrInUse, path)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrDamaged, path, err)
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		var errs []string
		for e := range tx.Check() {
			if len(errs) < 5 {
				errs = append(errs, e.Error())
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%w: %s: %s", ErrDamaged, path, strings.Join(errs, "; "))
		}
		return nil
	})
}
