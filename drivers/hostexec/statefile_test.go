package hostexec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadStateFile: a regular file is read; a symlink, a FIFO, a file
// over the bound and a missing file are errors (a missing one wrapping
// os.ErrNotExist), and none of them blocks.
func TestReadStateFile(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(ok, []byte(`{"PID":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", MaxStateFile+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadStateFile(ok); err != nil || string(b) != `{"PID":1}` {
		t.Errorf("regular file: %q, %v", b, err)
	}
	for _, p := range []string{link, fifo, big} {
		if _, err := ReadStateFile(p); err == nil {
			t.Errorf("%s: read, want refused", filepath.Base(p))
		}
	}
	if _, err := ReadStateFile(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want os.ErrNotExist", err)
	}
}

// TestExitStatusRoundTrip: a status written by WriteStateFile reads back
// as the exit result; a garbled one is an error naming the file.
func TestExitStatusRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "exit.json")
	if err := WriteStateFile(p, ExitStatus{ExitCode: 137, Signal: 9}, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := ReadExitStatus(p)
	if err != nil || res.ExitCode != 137 || res.Signal != 9 {
		t.Fatalf("read back %+v, %v", res, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadExitStatus(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("garbled status: %v, want an error naming %s", err, p)
	}
}
