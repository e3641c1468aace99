package state

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

func openTemp(t *testing.T) (*DB, string) {
	t.Helper()
	path := Path(t.TempDir())
	db, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return db, path
}

// TestRoundTripAcrossReopen writes an allocation, a task state and a
// handle, closes the file, opens it again and reads them back.
func TestRoundTripAcrossReopen(t *testing.T) {
	db, path := openTemp(t)
	alloc := &structs.Allocation{ID: "a1", JobID: "job", TaskGroup: "g", AllocModifyIndex: 7, DesiredStatus: structs.AllocDesiredStatusRun}
	started := time.Unix(1700000000, 0).UTC()
	ts := &structs.TaskState{State: structs.TaskStateRunning, StartedAt: started, Events: []*structs.TaskEvent{{Type: structs.TaskStarted, Message: "up"}}}
	h := &drivers.TaskHandle{
		ID: "a1/web/0", Driver: "raw_exec", StartedAt: started,
		Config: &drivers.TaskConfig{ID: "a1/web/0", TaskDir: "/tmp/x", Config: map[string]any{"command": "sleep", "args": []any{"600"}}},
		State:  map[string]string{"pid": "123", "status_file": "/tmp/x/.s"},
	}
	for _, err := range []error{db.PutAlloc(alloc), db.PutTaskState("a1", "web", ts), db.PutTaskHandle("a1", "web", h)} {
		if err != nil {
			t.Fatalf("put: %v", err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	db, err := Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	got, errs, err := db.GetAllocs()
	if err != nil || len(errs) != 0 {
		t.Fatalf("GetAllocs: %v %v", err, errs)
	}
	if len(got) != 1 {
		t.Fatalf("got %d allocs, want 1", len(got))
	}
	g := got[0]
	if g.Alloc.ID != "a1" || g.Alloc.AllocModifyIndex != 7 {
		t.Errorf("alloc = %+v, want ID a1 index 7", g.Alloc)
	}
	if s := g.TaskStates["web"]; s == nil || s.State != structs.TaskStateRunning || !s.StartedAt.Equal(started) || len(s.Events) != 1 {
		t.Errorf("task state = %+v, want running since %v with 1 event", s, started)
	}
	gh := g.TaskHandles["web"]
	if gh == nil || gh.ID != "a1/web/0" || gh.State["pid"] != "123" || gh.Config.TaskDir != "/tmp/x" {
		t.Fatalf("handle = %+v, want a1/web/0 pid 123", gh)
	}
	if args, _ := gh.Config.Config["args"].([]any); len(args) != 1 || args[0] != "600" {
		t.Errorf("handle config args = %#v, want [600]", gh.Config.Config["args"])
	}
}

func TestHandleDeleteAndAllocDelete(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	if err := db.PutAlloc(&structs.Allocation{ID: "a1"}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutAlloc(&structs.Allocation{ID: "a2"}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutTaskHandle("a1", "web", &drivers.TaskHandle{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutTaskHandle("a1", "web", nil); err != nil {
		t.Fatalf("delete handle: %v", err)
	}
	if err := db.DeleteAlloc("a2"); err != nil {
		t.Fatalf("DeleteAlloc: %v", err)
	}
	if err := db.DeleteAlloc("never"); err != nil {
		t.Errorf("DeleteAlloc of unknown: %v, want nil", err)
	}
	got, _, err := db.GetAllocs()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Alloc.ID != "a1" || len(got[0].TaskHandles) != 0 {
		t.Errorf("got %d allocs (first %+v), want only a1 without handles", len(got), got[0])
	}
}

func TestPutTaskOfUnknownAlloc(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	err := db.PutTaskState("nope", "web", &structs.TaskState{})
	if !errors.Is(err, ErrUnknownAlloc) {
		t.Errorf("PutTaskState error = %v, want ErrUnknownAlloc", err)
	}
}

func TestSecondOpenFailsWhileHeld(t *testing.T) {
	db, path := openTemp(t)
	defer db.Close()
	if _, err := Open(filepath.Clean(path)); err == nil {
		t.Error("second Open of a held file succeeded, want a timeout error")
	}
}
