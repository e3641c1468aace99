package allocrunner

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestFetchArtifactDoesNotWriteThroughPlantedLink: a task dir symlink
// left by an earlier attempt ("local/x" -> a host dir) does not send an
// unpacked archive's files out of the task dir.
func TestFetchArtifactDoesNotWriteThroughPlantedLink(t *testing.T) {
	archive := tarGz(t, map[string]string{"x/passwd": "pwned"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(archive) }))
	defer srv.Close()
	allocDir, host := t.TempDir(), t.TempDir()
	taskDir := filepath.Join(allocDir, "t")
	if err := os.MkdirAll(filepath.Join(taskDir, "local"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(taskDir, "local", "x")); err != nil {
		t.Fatal(err)
	}
	a := &structs.TaskArtifact{GetterSource: srv.URL + "/b.tar.gz"}
	a.Canonicalize()
	err := FetchArtifact(context.Background(), a, taskDir, allocDir, TaskFilesConfig{})
	if _, serr := os.Stat(filepath.Join(host, "passwd")); serr == nil {
		t.Fatalf("the archive wrote through the task's symlink into the host dir (fetch: %v)", err)
	}
	if err == nil {
		t.Fatal("fetch through an escaping symlink succeeded, want an error")
	}
}

// TestFetchArtifactFileDir: a dir inside the allocation dir is copied
// with its files' modes; a symlink inside it is refused.
func TestFetchArtifactFileDir(t *testing.T) {
	allocDir := t.TempDir()
	taskDir := filepath.Join(allocDir, "t")
	src := filepath.Join(allocDir, "alloc", "data", "bin")
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(taskDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "sub", "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	fetch := func() error {
		a := &structs.TaskArtifact{GetterSource: "file://" + src, RelativeDest: "local/bin", GetterMode: "dir"}
		a.Canonicalize()
		return FetchArtifact(context.Background(), a, taskDir, allocDir, TaskFilesConfig{})
	}
	if err := fetch(); err != nil {
		t.Fatalf("dir source: %v", err)
	}
	fi, err := os.Lstat(filepath.Join(taskDir, "local", "bin", "sub", "run.sh"))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("copied file: %v %v, want a regular 0755 file", fi, err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "sub", "pw")); err != nil {
		t.Fatal(err)
	}
	if err := fetch(); err == nil {
		t.Fatal("a dir source holding a symlink out of the alloc dir was copied")
	}
}

// TestStageFileSourceRefusesSwappedLink: a dir of a file source that
// became a symlink out of the allocation dir after the check (a task of
// the allocation racing the client) is not read through.
func TestStageFileSourceRefusesSwappedLink(t *testing.T) {
	allocDir, host := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "shadow"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(allocDir, "alloc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(allocDir, "alloc", "d")); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "src")
	_, err := stageFileSource(allocDir, filepath.Join(allocDir, "alloc", "d", "shadow"), dst, 1<<20)
	if err == nil {
		t.Fatal("read through a symlink out of the allocation dir")
	}
	if _, serr := os.Stat(dst); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("staged copy exists: %v", serr)
	}
}

// TestFetchArtifactRefusesFIFO: a FIFO as a file source fails at once
// instead of blocking the task's prestart (and its stop) forever.
func TestFetchArtifactRefusesFIFO(t *testing.T) {
	allocDir := t.TempDir()
	taskDir := filepath.Join(allocDir, "t")
	fifo := filepath.Join(allocDir, "alloc", "data", "p")
	if err := os.MkdirAll(filepath.Dir(fifo), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(taskDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		a := &structs.TaskArtifact{GetterSource: "file://" + fifo, RelativeDest: "local/p", GetterMode: "file"}
		a.Canonicalize()
		done <- FetchArtifact(context.Background(), a, taskDir, allocDir, TaskFilesConfig{})
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("fetched a FIFO")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("FetchArtifact blocked on a FIFO")
	}
}
