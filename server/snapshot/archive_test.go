package snapshot

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func testArchive(t *testing.T, state []byte) ([]byte, Meta) {
	t.Helper()
	meta := Meta{ID: "2-17-1700000000000", Index: 17, Term: 2, RaftVersion: 1, Size: int64(len(state)),
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	var buf bytes.Buffer
	if err := Write(&buf, meta, bytes.NewReader(state)); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return buf.Bytes(), meta
}

func TestRoundTrip(t *testing.T) {
	state := bytes.Repeat([]byte("drover state "), 1000)
	archive, meta := testArchive(t, state)
	var got bytes.Buffer
	v, err := Read(bytes.NewReader(archive), &got)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if !bytes.Equal(got.Bytes(), state) {
		t.Errorf("state: got %d bytes, want the %d written", got.Len(), len(state))
	}
	meta.FormatVersion = FormatVersion
	if v.Meta != meta {
		t.Errorf("meta: got %+v, want %+v", v.Meta, meta)
	}
	if len(v.StateSHA256) != 64 {
		t.Errorf("StateSHA256: got %q, want 64 hex digits", v.StateSHA256)
	}
}

func TestWriteSizeMismatch(t *testing.T) {
	for _, size := range []int64{3, 5} {
		meta := Meta{Index: 1, Term: 1, Size: size}
		err := Write(&bytes.Buffer{}, meta, strings.NewReader("four"))
		if err == nil || !strings.Contains(err.Error(), "meta says") {
			t.Errorf("size %d: got %v, want a size mismatch error", size, err)
		}
	}
}

// TestFlippedBytes flips each byte of an archive in turn: Read must refuse
// the file, or (for the gzip header's mtime and OS bytes, which no
// checksum covers) return exactly the original state and meta.
func TestFlippedBytes(t *testing.T) {
	state := []byte("a small state stream that is not all the same byte 0123456789")
	archive, _ := testArchive(t, state)
	want, err := Read(bytes.NewReader(archive), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var refused int
	for i := range archive {
		bad := bytes.Clone(archive)
		bad[i] ^= 0x5a
		var got bytes.Buffer
		v, err := Read(bytes.NewReader(bad), &got)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("byte %d: got %v, want ErrDamaged", i, err)
			}
			refused++
			continue
		}
		if !bytes.Equal(got.Bytes(), state) || v.Meta != want.Meta {
			t.Fatalf("byte %d flipped: Read accepted a different archive (meta %+v)", i, v.Meta)
		}
	}
	if refused < len(archive)-8 {
		t.Errorf("refused %d of %d flips, want all but the gzip header's unchecked bytes", refused, len(archive))
	}
}

func TestTruncated(t *testing.T) {
	archive, _ := testArchive(t, bytes.Repeat([]byte{1, 2, 3}, 500))
	for n := range len(archive) {
		_, err := Read(bytes.NewReader(archive[:n]), &bytes.Buffer{})
		if !errors.Is(err, ErrDamaged) {
			t.Fatalf("truncated to %d of %d bytes: got %v, want ErrDamaged", n, len(archive), err)
		}
	}
}

func TestTrailingGarbage(t *testing.T) {
	archive, _ := testArchive(t, []byte("state"))
	_, err := Read(bytes.NewReader(append(bytes.Clone(archive), "junk"...)), &bytes.Buffer{})
	if !errors.Is(err, ErrDamaged) {
		t.Errorf("got %v, want ErrDamaged", err)
	}
}

func TestNotAnArchive(t *testing.T) {
	_, err := Read(strings.NewReader("job \"web\" {}\n"), &bytes.Buffer{})
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "not a gzip stream") {
		t.Errorf("got %v, want ErrDamaged: not a gzip stream", err)
	}
}

func TestStateWriterError(t *testing.T) {
	archive, _ := testArchive(t, []byte("state"))
	boom := errors.New("disk full")
	_, err := Read(bytes.NewReader(archive), failWriter{boom})
	if !errors.Is(err, boom) || errors.Is(err, ErrDamaged) {
		t.Errorf("got %v, want the writer's error, not ErrDamaged", err)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }
