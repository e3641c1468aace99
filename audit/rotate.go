package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// archiveLayout is the UTC timestamp, to the millisecond, in an archive's
// name: audit-20260907T080526.123Z.log. Names sort in time order.
const archiveLayout = "20060102T150405.000Z"

// maybeRotate rotates the current file if a line of n bytes would take it
// past RotateBytes or it is older than RotateDuration. An empty file is
// never archived; its age restarts instead.
func (l *Log) maybeRotate(n int64) error {
	now := l.clock()
	aged := now.Sub(l.opened) >= l.cfg.RotateDuration
	if l.size == 0 {
		if aged {
			l.opened = now
		}
		return nil
	}
	if !aged && l.size+n <= l.cfg.RotateBytes {
		return nil
	}
	return l.rotate(now)
}

// rotate closes the current file, renames it to an archive name, opens a
// fresh file and prunes old archives. If the rename fails the current file
// is reopened, so writing goes on. On return l.f is nil only if no file
// could be opened.
func (l *Log) rotate(now time.Time) error {
	closeErr := closeFile(l.f)
	l.f = nil
	archive, err := l.archivePath(now)
	if err == nil {
		err = l.rename(l.cfg.Path, archive)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("%w: %w", ErrRotate, err), closeErr, l.open(now))
	}
	l.lastArchive = archiveTime(now)
	errs := []error{closeErr, l.open(now), syncDir(filepath.Dir(l.cfg.Path)), l.prune()}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrRotate, err)
	}
	return nil
}

// archivePath names the archive for a rotation at now: <stem>-<UTC
// timestamp><ext> beside the log. The timestamp is moved on by a
// millisecond at a time past this Log's last archive and past any file
// already there, so names never collide and sort in rotation order.
func (l *Log) archivePath(now time.Time) (string, error) {
	ts := archiveTime(now)
	if !l.lastArchive.IsZero() && !ts.After(l.lastArchive) {
		ts = l.lastArchive.Add(time.Millisecond)
	}
	for range 1000 {
		p := l.archiveName(ts)
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return p, nil
		}
		ts = ts.Add(time.Millisecond)
	}
	return "", fmt.Errorf("no free archive name near %s", l.archiveName(archiveTime(now)))
}

func (l *Log) archiveName(ts time.Time) string {
	stem, ext := l.stemExt()
	return filepath.Join(filepath.Dir(l.cfg.Path), stem+"-"+ts.Format(archiveLayout)+ext)
}

func (l *Log) stemExt() (stem, ext string) {
	base := filepath.Base(l.cfg.Path)
	ext = filepath.Ext(base)
	return strings.TrimSuffix(base, ext), ext
}

func archiveTime(t time.Time) time.Time {
	return t.UTC().Truncate(time.Millisecond)
}

// prune deletes the oldest archives beyond RotateMaxFiles. Only names that
// parse as this log's archives count; other files are left alone.
func (l *Log) prune() error {
	dir := filepath.Dir(l.cfg.Path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	stem, ext := l.stemExt()
	var archives []string
	for _, e := range ents {
		rest, okStem := strings.CutPrefix(e.Name(), stem+"-")
		mid, okExt := strings.CutSuffix(rest, ext)
		if !okStem || !okExt || !e.Type().IsRegular() {
			continue
		}
		if _, err := time.Parse(archiveLayout, mid); err == nil {
			archives = append(archives, e.Name())
		}
	}
	slices.Sort(archives)
	var errs []error
	for len(archives) > l.cfg.RotateMaxFiles {
		if err := os.Remove(filepath.Join(dir, archives[0])); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("prune: %w", err))
		}
		archives = archives[1:]
	}
	return errors.Join(errs...)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return errors.Join(d.Sync(), d.Close())
}
