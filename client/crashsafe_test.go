package client

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/client/state"
)

// TestDamagedStateKillsOrphans: a client shut down with
// LeaveTasksRunning leaves a raw_exec task running; its state file is
// then damaged (scribbled over, truncated, emptied). The next client
// moves the file aside, starts, kills the task it can no longer
// re-attach to (so it holds no GPU the servers think free) and runs the
// servers' allocation again.
func TestDamagedStateKillsOrphans(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"scribbled", scribbleMiddle},
		{"truncated", func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"empty", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, time.Second)
			cfg := testConfig(t, srv.addr())
			cfg.LeaveTasksRunning = true
			c1, err := NewClient(cfg)
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r >= 1 })
			a := batchAlloc(c1.NodeID(), `echo $$; exec sleep 30`, "gpu-0")
			srv.putAlloc(a)
			path, _ := c1.LogPath(a.ID, "t", false)
			pids := func() []int {
				b, _ := os.ReadFile(path)
				var out []int
				for _, f := range strings.Fields(string(b)) {
					if p, err := strconv.Atoi(f); err == nil {
						out = append(out, p)
					}
				}
				return out
			}
			waitFor(t, "task pid", func() bool { return len(pids()) == 1 })
			pid := pids()[0]
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			if err := c1.Shutdown(); err != nil {
				t.Fatal(err)
			}
			if syscall.Kill(pid, 0) != nil {
				t.Fatalf("task %d died with LeaveTasksRunning", pid)
			}

			dbPath := state.Path(cfg.DataDir)
			tt.damage(t, dbPath)
			cfg2 := *cfg
			cfg2.LeaveTasksRunning = false
			c2 := startClient(t, &cfg2)
			if c2.NodeID() != c1.NodeID() {
				t.Errorf("node ID changed: %s, was %s", c2.NodeID(), c1.NodeID())
			}
			// Killed at start; the signal lands (and the process ends)
			// a moment later on a loaded machine.
			waitFor(t, fmt.Sprintf("old task %d to be killed", pid), func() bool { return !alive(pid) })
			aside, _ := filepath.Glob(dbPath + ".damaged-*")
			if len(aside) != 1 {
				t.Errorf("damaged files moved aside: %v, want one", aside)
			}
			// The servers still want the allocation: it runs again, once.
			waitFor(t, "allocation run again", func() bool { return len(pids()) == 2 })
			if alive(pid) {
				t.Errorf("old task %d runs beside the new one", pid)
			}
			second := pids()[1]
			if second == pid {
				t.Fatalf("same pid %d twice", pid)
			}
			t.Cleanup(func() { _ = syscall.Kill(second, syscall.SIGKILL) })
			if err := c2.Shutdown(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "second task killed at shutdown", func() bool { return !alive(second) })
			if left, _ := filepath.Glob(filepath.Join(cfg.DataDir, "alloc", "*", ".drover-task-*")); len(left) != 0 {
				t.Errorf("pid files left after every task ended: %v", left)
			}
		})
	}
}

// scribbleMiddle overwrites the middle third of the file with random
// bytes.
func scribbleMiddle(t *testing.T, path string) {
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := len(buf) / 3; i < 2*len(buf)/3; i++ {
		buf[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(path, buf, 0o600); err != nil {
		t.Fatal(err)
	}
}

// alive reports whether pid runs: a zombie (killed, its parent gone,
// not yet reaped by init) does not.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z' && s[i+2] != 'X'
}

// TestDataDirLocked: a second client on a running client's data dir
// refuses to start, and leaves the first one's state file and tasks
// alone; once the first stops, the dir is free again.
func TestDataDirLocked(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	cfg := testConfig(t, srv.addr())
	first, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	second, err := NewClient(cfg)
	if err == nil {
		second.Shutdown()
		first.Shutdown()
		t.Fatal("a second client started on a data dir in use")
	}
	if !errors.Is(err, errDataDirInUse) {
		t.Errorf("second client: %v, want the data dir in use", err)
	}
	if aside, _ := filepath.Glob(state.Path(cfg.DataDir) + ".damaged-*"); len(aside) != 0 {
		t.Errorf("the running client's state was moved aside: %v", aside)
	}
	if err := first.Shutdown(); err != nil {
		t.Fatal(err)
	}
	startClient(t, cfg)
}
