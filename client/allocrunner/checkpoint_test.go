package allocrunner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/drivers/rawexec"
	"github.com/droverhq/drover/structs"
)

// ckptAlloc is an allocation of index idx of job1's group g, whose group
// has a checkpoint block, running script with raw_exec.
func ckptAlloc(idx int, cp *structs.CheckpointConfig, policy *structs.RestartPolicy, script string) *structs.Allocation {
	a := testAlloc(structs.JobTypeBatch, policy, shTask("t", script))
	a.Job.TaskGroups[0].Checkpoint = cp
	a.Job.TaskGroups[0].Count = idx + 1
	a.Name = structs.AllocName("job1", "g", idx)
	return a
}

func newCkptRunner(t *testing.T, alloc *structs.Allocation, root string) *AllocRunner {
	t.Helper()
	ar, err := New(&Config{
		Alloc:          alloc,
		DataDir:        drivertest.ReachableTempDir(t),
		Drivers:        map[string]drivers.Driver{"raw_exec": rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true})},
		OnUpdate:       func(*structs.Allocation) {},
		CheckpointRoot: root,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ar
}

const ckptScript = `echo "$DROVER_CHECKPOINT_DIR $DROVER_RESTART_COUNT $DROVER_RESUMED $(cat "$DROVER_CHECKPOINT_DIR/counter" 2>/dev/null)"
n=$(cat "$DROVER_CHECKPOINT_DIR/counter" 2>/dev/null || echo 0)
echo $((n+1)) > "$DROVER_CHECKPOINT_DIR/counter"
[ "$DROVER_RESTART_COUNT" -ge 1 ] || exit 3`

func TestCheckpointDirOutlivesAllocation(t *testing.T) {
	root := drivertest.ReachableTempDir(t)
	policy := &structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: 10 * time.Millisecond, Mode: structs.RestartModeFail}
	dir := filepath.Join(root, "default", "job1", "g", "0")

	first := newCkptRunner(t, ckptAlloc(0, &structs.CheckpointConfig{}, policy, ckptScript), root)
	if got := runToEnd(t, first); got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("first allocation = %q, want complete: %+v", got.ClientStatus, got.TaskStates)
	}
	// Attempt 0 starts on an empty dir; its restart finds its counter.
	want := dir + " 0 0 \n" + dir + " 1 1 1\n"
	if out := readLog(t, first, "t", false); out != want {
		t.Errorf("first allocation's stdout = %q, want %q", out, want)
	}

	// A replacement with the same index (a reschedule, a preemption's
	// replacement) on another alloc dir resumes from the same dir.
	second := newCkptRunner(t, ckptAlloc(0, &structs.CheckpointConfig{}, policy, ckptScript), root)
	runToEnd(t, second)
	if out := readLog(t, second, "t", false); !strings.HasPrefix(out, dir+" 0 1 2\n") {
		t.Errorf("replacement's stdout = %q, want it to resume at counter 2", out)
	}

	// Another rank has a dir of its own.
	other := newCkptRunner(t, ckptAlloc(3, &structs.CheckpointConfig{}, policy, ckptScript), root)
	runToEnd(t, other)
	if out := readLog(t, other, "t", false); !strings.HasPrefix(out, filepath.Join(root, "default", "job1", "g", "3")+" 0 0 \n") {
		t.Errorf("rank 3's stdout = %q, want a fresh dir of its own", out)
	}

	b, err := os.ReadFile(filepath.Join(root, "default", "job1", CheckpointJobMarker))
	if err != nil {
		t.Fatal(err)
	}
	var job CheckpointJob
	if err := json.Unmarshal(b, &job); err != nil || job != (CheckpointJob{Namespace: "default", JobID: "job1"}) {
		t.Errorf("job marker = %s (%v), want default/job1", b, err)
	}
}

func TestCheckpointKeep(t *testing.T) {
	root := drivertest.ReachableTempDir(t)
	script := `cd "$DROVER_CHECKPOINT_DIR"
touch -d @1000 a; touch -d @2000 b; mkdir c; touch -d @3000 c; touch -d @4000 d; touch -d @5000 .drover-checkpoint`
	ar := newCkptRunner(t, ckptAlloc(0, &structs.CheckpointConfig{Keep: 2}, nil, script), root)
	got := runToEnd(t, ar)
	if got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("allocation = %q, want complete: %+v", got.ClientStatus, got.TaskStates)
	}
	if last := got.TaskStates["t"].LastCheckpoint; last != 5000*int64(time.Second) {
		t.Errorf("LastCheckpoint = %d, want the marker's mtime", last)
	}
	ents, err := os.ReadDir(filepath.Join(root, "default", "job1", "g", "0"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{".drover-checkpoint", "c", "d"}; !slices.Equal(names, want) {
		t.Errorf("after keep = 2: %v, want %v", names, want)
	}
}

func TestCheckpointWithoutRootFailsSetup(t *testing.T) {
	ar := newCkptRunner(t, ckptAlloc(0, &structs.CheckpointConfig{}, nil, "true"), "")
	got := runToEnd(t, ar)
	if got.ClientStatus != structs.AllocClientStatusFailed {
		t.Fatalf("status = %q, want failed", got.ClientStatus)
	}
	var msgs []string
	for _, e := range got.TaskStates["t"].Events {
		msgs = append(msgs, e.Message+e.DisplayMessage)
	}
	if !strings.Contains(strings.Join(msgs, "|"), "checkpoint_root") {
		t.Errorf("events = %q, want one naming checkpoint_root", msgs)
	}
}

// TestCheckpointReportedWhileRunning: the client reads a running task's
// checkpoint marker every checkpointPoll and reports its mtime.
func TestCheckpointReportedWhileRunning(t *testing.T) {
	root := drivertest.ReachableTempDir(t)
	alloc := ckptAlloc(0, &structs.CheckpointConfig{}, nil,
		`touch -d @7000 "$DROVER_CHECKPOINT_DIR/.drover-checkpoint"; echo ready; exec sleep 30`)
	clock := &gateClock{d: checkpointPoll, gate: make(chan time.Time)}
	ar, err := New(&Config{
		Alloc: alloc, DataDir: drivertest.ReachableTempDir(t), Clock: clock, CheckpointRoot: root,
		Drivers:  map[string]drivers.Driver{"raw_exec": rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true})},
		OnUpdate: func(*structs.Allocation) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	go ar.Run()
	t.Cleanup(func() { ar.Kill("test done"); waitDone(t, ar) })
	marker := filepath.Join(root, "default", "job1", "g", "0", CheckpointMarker)
	waitFor(t, func() bool {
		fi, err := os.Stat(marker)
		return err == nil && fi.ModTime().Unix() == 7000 && clock.asked.Load() > 0
	})
	if got := ar.Alloc().TaskStates["t"].LastCheckpoint; got != 0 {
		t.Fatalf("LastCheckpoint = %d before the poll, want 0", got)
	}
	clock.gate <- time.Now()
	waitFor(t, func() bool { return ar.Alloc().TaskStates["t"].LastCheckpoint == 7000*int64(time.Second) })
}
