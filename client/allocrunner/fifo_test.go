package allocrunner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/client/template"
	"github.com/droverhq/drover/structs"
)

// withinDeadline fails the test when fn blocks for 5 seconds.
func withinDeadline(t *testing.T, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s blocked on a FIFO", what)
		return nil
	}
}

// TestWritesReplaceFIFOs: a FIFO a task left where the client writes a
// template, a dispatch payload or an artifact does not block the client:
// the file replaces it.
func TestWritesReplaceFIFOs(t *testing.T) {
	taskDir := t.TempDir()
	mkfifo := func(rel string) {
		t.Helper()
		p := filepath.Join(taskDir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	regular := func(rel, want string) {
		t.Helper()
		p := filepath.Join(taskDir, rel)
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s: %v %v, want a regular file", rel, fi, err)
		}
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s = %q, want %q", rel, b, want)
		}
	}

	mkfifo("local/app.conf")
	err := withinDeadline(t, "template write", func() error {
		_, err := template.WriteFile(taskDir, "local/app.conf", []byte("a=1"), 0o644)
		return err
	})
	if err != nil {
		t.Fatalf("template write: %v", err)
	}
	regular("local/app.conf", "a=1")

	mkfifo("local/in.json")
	job := &structs.Job{Payload: []byte("{}")}
	task := &structs.Task{Name: "t", DispatchPayload: &structs.DispatchPayloadConfig{File: "in.json"}}
	if err := withinDeadline(t, "dispatch payload", func() error { return writeDispatchPayload(job, task, taskDir) }); err != nil {
		t.Fatalf("dispatch payload: %v", err)
	}
	regular("local/in.json", "{}")

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("w")) }))
	defer srv.Close()
	mkfifo("local/model.bin")
	a := &structs.TaskArtifact{GetterSource: srv.URL + "/model.bin"}
	a.Canonicalize()
	err = withinDeadline(t, "artifact", func() error {
		return FetchArtifact(context.Background(), a, taskDir, filepath.Dir(taskDir), TaskFilesConfig{})
	})
	if err != nil {
		t.Fatalf("artifact: %v", err)
	}
	regular("local/model.bin", "w")
}
