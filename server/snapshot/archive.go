// Package snapshot is the file format of `drover operator snapshot`: a
// gzip-compressed tar holding, in this order,
//
//	meta.json   the Raft snapshot's ID, index, term and size (Meta)
//	state.bin   the FSM's snapshot stream, exactly Meta.Size bytes
//	SHA256SUMS  the SHA-256 of meta.json and of state.bin, in sha256sum's format
//
// Read checks all of it (gzip CRC, tar structure, sizes, both checksums,
// nothing after SHA256SUMS) and reports damage as ErrDamaged, so a caller
// can refuse a bad file before it touches any state. The package only
// reads and writes archives: it must not talk to Raft or a server.
package snapshot

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"
)

// FormatVersion is the archive layout Write produces; Read refuses others.
const FormatVersion = 1

// Names of the archive's members.
const (
	metaName  = "meta.json"
	stateName = "state.bin"
	sumsName  = "SHA256SUMS"
)

// maxMetaSize bounds meta.json and SHA256SUMS, which are a few hundred
// bytes; a larger header means a damaged or foreign file.
const maxMetaSize = 64 << 10

// ErrDamaged is wrapped by every error Read returns for an archive that is
// damaged, truncated, or not a snapshot archive.
var ErrDamaged = errors.New("snapshot archive is damaged or truncated")

// Meta describes the Raft snapshot inside an archive.
type Meta struct {
	// FormatVersion is the archive layout (FormatVersion).
	FormatVersion int
	// ID, Index and Term identify the Raft snapshot; RaftVersion is its
	// raft.SnapshotVersion.
	ID          string
	Index, Term uint64
	RaftVersion int
	// Size is the length of state.bin in bytes.
	Size int64
	// Created is when the archive was written.
	Created time.Time
}

// Verified is what Read found in an intact archive.
type Verified struct {
	Meta Meta
	// StateSHA256 is the hex SHA-256 of state.bin, as SHA256SUMS lists it.
	StateSHA256 string
}

// Write writes an archive of meta and the state stream to w. state must
// yield exactly meta.Size bytes.
func Write(w io.Writer, meta Meta, state io.Reader) error {
	meta.FormatVersion = FormatVersion
	if meta.Created.IsZero() {
		meta.Created = time.Now().UTC()
	}
	metaJSON, err := json.MarshalIndent(&meta, "", "  ")
	if err != nil {
		return fmt.Errorf("encode snapshot meta: %w", err)
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	metaSum := sha256.Sum256(metaJSON)
	if err := writeMember(tw, metaName, metaJSON); err != nil {
		return err
	}
	if err := tw.WriteHeader(member(stateName, meta.Size, meta.Created)); err != nil {
		return fmt.Errorf("write %s header: %w", stateName, err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tw, h), io.LimitReader(state, meta.Size))
	if err != nil {
		return fmt.Errorf("write %s: %w", stateName, err)
	}
	if extra, _ := io.Copy(io.Discard, state); n != meta.Size || extra > 0 {
		return fmt.Errorf("write %s: state is %d bytes, meta says %d", stateName, n+extra, meta.Size)
	}
	sums := fmt.Sprintf("%x  %s\n%x  %s\n", metaSum, metaName, h.Sum(nil), stateName)
	if err := writeMember(tw, sumsName, []byte(sums)); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("close snapshot archive: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("close snapshot archive: %w", err)
	}
	return nil
}

func member(name string, size int64, mtime time.Time) *tar.Header {
	return &tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
}

func writeMember(tw *tar.Writer, name string, data []byte) error {
	if err := tw.WriteHeader(member(name, int64(len(data)), time.Now().UTC())); err != nil {
		return fmt.Errorf("write %s header: %w", name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// Read verifies the archive in r and copies its state stream to state
// (io.Discard to only check it). The state written is trustworthy only
// when Read returns no error: a caller restoring from it must wait for
// the end. Damage is reported wrapping ErrDamaged; errors writing to
// state are returned as they are.
func Read(r io.Reader, state io.Writer) (*Verified, error) {
	gz, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return nil, damaged("not a gzip stream: %v", err)
	}
	tr := tar.NewReader(gz)
	metaJSON, err := readSmall(tr, metaName)
	if err != nil {
		return nil, err
	}
	var meta Meta
	if err := json.Unmarshal(metaJSON, &meta); err != nil {
		return nil, damaged("%s: %v", metaName, err)
	}
	if meta.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("%w: archive format %d, this drover reads %d", ErrDamaged, meta.FormatVersion, FormatVersion)
	}
	stateSum, err := readState(tr, &meta, state)
	if err != nil {
		return nil, err
	}
	sums, err := readSmall(tr, sumsName)
	if err != nil {
		return nil, err
	}
	if err := checkSums(string(sums), map[string]string{
		metaName:  hex.EncodeToString(sha(metaJSON)),
		stateName: stateSum,
	}); err != nil {
		return nil, err
	}
	if err := readEnd(tr, gz); err != nil {
		return nil, err
	}
	return &Verified{Meta: meta, StateSHA256: stateSum}, nil
}

func sha(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// damaged formats an error that wraps ErrDamaged.
func damaged(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrDamaged, fmt.Sprintf(format, args...))
}

// next reads the next member's header and checks that it is name.
func next(tr *tar.Reader, name string) (*tar.Header, error) {
	hdr, err := tr.Next()
	switch {
	case errors.Is(err, io.EOF):
		return nil, damaged("archive ends before %s", name)
	case err != nil:
		return nil, damaged("reading %s: %v", name, err)
	case hdr.Name != name:
		return nil, damaged("found %q where %s belongs", hdr.Name, name)
	case hdr.Typeflag != tar.TypeReg:
		return nil, damaged("%s is not a regular file", name)
	}
	return hdr, nil
}

// readSmall reads the next member, which must be name and small.
func readSmall(tr *tar.Reader, name string) ([]byte, error) {
	hdr, err := next(tr, name)
	if err != nil {
		return nil, err
	}
	if hdr.Size < 0 || hdr.Size > maxMetaSize {
		return nil, damaged("%s is %d bytes", name, hdr.Size)
	}
	buf, err := io.ReadAll(tr)
	if err != nil {
		return nil, damaged("reading %s: %v", name, err)
	}
	return buf, nil
}

// readState copies state.bin to w and returns its hex SHA-256.
func readState(tr *tar.Reader, meta *Meta, w io.Writer) (string, error) {
	hdr, err := next(tr, stateName)
	if err != nil {
		return "", err
	}
	if hdr.Size != meta.Size {
		return "", damaged("%s is %d bytes, %s says %d", stateName, hdr.Size, metaName, meta.Size)
	}
	h := sha256.New()
	if _, err := io.Copy(&teeHash{w: w, h: h}, tr); err != nil {
		var we *writeError
		if errors.As(err, &we) {
			return "", we.err
		}
		return "", damaged("reading %s: %v", stateName, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// teeHash writes to w and h, telling w's errors apart from the reader's.
type teeHash struct {
	w io.Writer
	h hash.Hash
}

type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

func (t *teeHash) Write(p []byte) (int, error) {
	t.h.Write(p)
	if _, err := t.w.Write(p); err != nil {
		return 0, &writeError{err: err}
	}
	return len(p), nil
}

// checkSums compares SHA256SUMS with the computed sums of every member.
func checkSums(sums string, got map[string]string) error {
	listed := map[string]string{}
	for line := range strings.Lines(sums) {
		sum, name, ok := strings.Cut(strings.TrimRight(line, "\n"), "  ")
		if !ok {
			return damaged("%s: malformed line %q", sumsName, line)
		}
		listed[name] = sum
	}
	for name, sum := range got {
		want, ok := listed[name]
		switch {
		case !ok:
			return damaged("%s does not list %s", sumsName, name)
		case want != sum:
			return damaged("%s checksum mismatch: SHA-256 %s, %s says %s", name, sum, sumsName, want)
		}
	}
	if len(listed) != len(got) {
		return damaged("%s lists %d files, the archive has %d", sumsName, len(listed), len(got))
	}
	return nil
}

// readEnd checks that nothing follows SHA256SUMS and reads the gzip
// stream to its end, which verifies its CRC and length.
func readEnd(tr *tar.Reader, gz *gzip.Reader) error {
	hdr, err := tr.Next()
	switch {
	case err == nil:
		return damaged("unexpected member %q after %s", hdr.Name, sumsName)
	case !errors.Is(err, io.EOF):
		return damaged("reading the end of the archive: %v", err)
	}
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return damaged("gzip trailer: %v", err)
	}
	return nil
}
