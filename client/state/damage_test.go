package state

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// fullState writes a state file with a few allocations, tasks and
// handles, closes it and returns its path.
func fullState(t *testing.T) string {
	t.Helper()
	db, path := openTemp(t)
	for i := range 20 {
		id := structs.GenerateUUID()
		a := &structs.Allocation{ID: id, JobID: "job", TaskGroup: strings.Repeat("g", i*50)}
		h := &drivers.TaskHandle{ID: id + "/t/0", Driver: "raw_exec", State: map[string]string{"pid": "1"}}
		for _, err := range []error{db.PutAlloc(a), db.PutTaskState(id, "t", &structs.TaskState{State: structs.TaskStateRunning}), db.PutTaskHandle(id, "t", h)} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// Damage functions shared with package client's tests are repeated
// there; these are the file shapes an operator meets after a crash.
func truncateHalf(t *testing.T, path string) {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
}

func emptyFile(t *testing.T, path string) {
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
}

// scribble overwrites everything past the two meta pages with random
// bytes: every data page, whatever the layout, is garbage.
func scribble(t *testing.T, path string) {
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 2 * os.Getpagesize(); i < len(buf); i++ {
		buf[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(path, buf, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestOpenDamaged: an empty, truncated or scribbled-over state file is
// ErrDamaged (no panic); moved aside, a fresh one opens empty and the
// damaged bytes are kept under the new name.
func TestOpenDamaged(t *testing.T) {
	tests := []struct {
		name   string
		damage func(*testing.T, string)
	}{
		{"empty", emptyFile},
		{"truncated", truncateHalf},
		{"scribbled", scribble},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := fullState(t)
			tt.damage(t, path)
			before, _ := os.ReadFile(path)
			_, err := Open(path)
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("Open: got %v, want ErrDamaged", err)
			}
			now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.FixedZone("x", 3600))
			aside, err := MoveAside(path, now)
			if err != nil {
				t.Fatal(err)
			}
			if want := path + ".damaged-20261126T110000Z"; aside != want {
				t.Errorf("aside %s, want %s", aside, want)
			}
			if got, _ := os.ReadFile(aside); string(got) != string(before) {
				t.Errorf("moved file differs from the damaged one")
			}
			db, err := Open(path)
			if err != nil {
				t.Fatalf("fresh Open: %v", err)
			}
			defer db.Close()
			allocs, errs, err := db.GetAllocs()
			if err != nil || len(allocs) != 0 || len(errs) != 0 {
				t.Errorf("fresh state: %d allocs, %v, %v", len(allocs), errs, err)
			}
		})
	}
}

// TestOpenInUseIsNotDamage: a file another DB holds open times out; it
// is not moved aside.
func TestOpenInUseIsNotDamage(t *testing.T) {
	db, path := openTemp(t)
	defer db.Close()
	_, err := Open(path)
	if err == nil || errors.Is(err, ErrDamaged) {
		t.Fatalf("second Open: got %v, want a timeout that is not ErrDamaged", err)
	}
	if _, err := os.Stat(filepath.Clean(path)); err != nil {
		t.Fatal(err)
	}
}
