package allocrunner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/taskuser"
	"github.com/droverhq/drover/structs"
)

// Checkpoint dirs (structs.CheckpointConfig): a group with a checkpoint
// block gets <root>/<namespace>/<job>/<group>/<rank> under the client's
// checkpoint_root, rank being the allocation's name index, so a restart,
// a reschedule, a preemption's replacement or a job update finds the
// same dir. Nothing here deletes it when the allocation ends; the
// client's GC removes a job's dir once the job is purged (client/gc.go
// reads the job marker written here).

// CheckpointJobMarker is the file in a job's checkpoint dir
// (<root>/<ns>/<job>) naming the job, for the client's GC.
const CheckpointJobMarker = ".drover-job"

// CheckpointMarker is a file a task touches in its checkpoint dir each
// time it checkpoints; its mtime is the task's last checkpoint.
const CheckpointMarker = ".drover-checkpoint"

// CheckpointJob is the content of a job's CheckpointJobMarker.
type CheckpointJob struct {
	Namespace string
	JobID     string
}

// driverRaw is the driver that gets the host path, with no mount.
const driverRaw = "raw_exec"

// checkpointDir is an allocation's checkpoint dir.
type checkpointDir struct {
	host     string // on the host
	taskPath string // where tasks with their own root see it
	keep     int
}

// prepareCheckpoint makes the allocation's checkpoint dir when its group
// has a checkpoint block, the tasks' users' own, and adds it to the
// mounts of tasks whose drivers give them a root of their own.
func (ar *AllocRunner) prepareCheckpoint(tg *structs.TaskGroup) error {
	if tg.Checkpoint == nil {
		return nil
	}
	if ar.checkpointRoot == "" {
		return errors.New("checkpoint: this client has no checkpoint_root (client { checkpoint_root = \"/path\" })")
	}
	alloc := ar.Alloc()
	rank := alloc.Index()
	dir, err := structs.CheckpointDir(ar.checkpointRoot, alloc.Namespace, alloc.JobID, tg.Name, rank)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint dir: %w", err)
	}
	if err := writeJobMarker(filepath.Dir(filepath.Dir(dir)), alloc); err != nil {
		return err
	}
	cp := &checkpointDir{host: dir, taskPath: dir, keep: tg.Checkpoint.Keep}
	if tg.Checkpoint.Path != "" {
		cp.taskPath = tg.Checkpoint.Path
	}
	if ar.mounts == nil {
		ar.mounts = map[string][]*drivers.MountConfig{}
	}
	for _, t := range tg.Tasks {
		if t.Driver == driverRaw {
			if err := chownToTaskUser(dir, t.User); err != nil {
				return err
			}
			continue
		}
		if t.Driver != "docker" {
			if err := chownToTaskUser(dir, t.User); err != nil {
				return err
			}
		}
		ar.mounts[t.Name] = append(ar.mounts[t.Name], &drivers.MountConfig{TaskPath: cp.taskPath, HostPath: dir})
	}
	ar.checkpoint = cp
	return nil
}

// chownToTaskUser makes dir the user's a task runs as (a no-op unless
// the client runs as root).
func chownToTaskUser(dir, name string) error {
	u, err := taskuser.ForTask(name)
	if err != nil {
		return fmt.Errorf("checkpoint dir: task user: %w", err)
	}
	if u.Credential() == nil {
		return nil
	}
	if err := os.Lchown(dir, int(u.UID), int(u.GID)); err != nil {
		return fmt.Errorf("checkpoint dir: %w", err)
	}
	return nil
}

// writeJobMarker names the job in its checkpoint dir, once.
func writeJobMarker(jobDir string, alloc *structs.Allocation) error {
	p := filepath.Join(jobDir, CheckpointJobMarker)
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	ns := alloc.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	b, err := json.Marshal(CheckpointJob{Namespace: ns, JobID: alloc.JobID})
	if err != nil {
		return fmt.Errorf("checkpoint marker: %w", err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return fmt.Errorf("checkpoint marker: %w", err)
	}
	return nil
}

// env is what a task of the allocation gets for one attempt; nil when
// its group has no checkpoint block.
func (cp *checkpointDir) env(t *structs.Task, attempt int) map[string]string {
	if cp == nil {
		return nil
	}
	path := cp.taskPath
	if t.Driver == driverRaw {
		path = cp.host
	}
	resumed := "0"
	if hasEntries(cp.host) {
		resumed = "1"
	}
	return map[string]string{
		structs.EnvCheckpointDir: path,
		structs.EnvRestartCount:  strconv.Itoa(attempt),
		structs.EnvResumed:       resumed,
	}
}

// hasEntries says whether dir holds anything.
func hasEntries(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return !errors.Is(err, io.EOF) && err == nil
}

// maxCheckpointEntries bounds how many entries of a checkpoint dir the
// keep pruning reads.
const maxCheckpointEntries = 100000

// prune keeps the newest keep entries (files or dirs, by mtime; the
// checkpoint marker is not counted and never removed) of the dir; a task
// exit calls it. Errors are the caller's to log.
func (cp *checkpointDir) prune() error {
	if cp == nil || cp.keep <= 0 {
		return nil
	}
	root, err := os.OpenRoot(cp.host)
	if err != nil {
		return fmt.Errorf("checkpoint prune: %w", err)
	}
	defer root.Close()
	f, err := root.Open(".")
	if err != nil {
		return fmt.Errorf("checkpoint prune: %w", err)
	}
	ents, err := f.ReadDir(maxCheckpointEntries)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("checkpoint prune: %w", err)
	}
	type entry struct {
		name  string
		mtime int64
	}
	var list []entry
	for _, e := range ents {
		if e.Name() == CheckpointMarker {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		list = append(list, entry{e.Name(), fi.ModTime().UnixNano()})
	}
	if len(list) <= cp.keep {
		return nil
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].mtime != list[j].mtime {
			return list[i].mtime > list[j].mtime
		}
		return list[i].name > list[j].name
	})
	var errs []error
	for _, e := range list[cp.keep:] {
		if err := root.RemoveAll(e.name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkpointPoll is how often a running task's last checkpoint is read.
const checkpointPoll = 5 * time.Second

// lastCheckpoint is when the task last checkpointed: the mtime of the
// CheckpointMarker it touches, else of the newest entry of the dir
// (unix nanoseconds; 0 when the dir is empty).
func (cp *checkpointDir) lastCheckpoint() int64 {
	if fi, err := os.Lstat(filepath.Join(cp.host, CheckpointMarker)); err == nil {
		return fi.ModTime().UnixNano()
	}
	f, err := os.Open(cp.host)
	if err != nil {
		return 0
	}
	defer f.Close()
	ents, _ := f.ReadDir(1000)
	var newest int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			newest = max(newest, fi.ModTime().UnixNano())
		}
	}
	return newest
}

// noteCheckpoint records the task's last checkpoint in its state when
// it moved on (reported to the servers with the next update).
func (tr *taskRunner) noteCheckpoint() {
	cp := tr.ar.checkpoint
	if cp == nil {
		return
	}
	last := cp.lastCheckpoint()
	if last == 0 {
		return
	}
	tr.ar.mu.Lock()
	s := tr.ar.states[tr.task.Name]
	moved := s != nil && s.LastCheckpoint != last
	tr.ar.mu.Unlock()
	if moved {
		tr.ar.mutate(tr.task.Name, func(s *structs.TaskState) { s.LastCheckpoint = last })
	}
}

// watchCheckpoint notes the task's last checkpoint every checkpointPoll
// while an attempt runs; the returned stop ends the watch, waits for
// it, and notes once more.
func (tr *taskRunner) watchCheckpoint() (stop func()) {
	if tr.ar.checkpoint == nil {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case <-tr.ar.clock.After(checkpointPoll):
				tr.noteCheckpoint()
			}
		}
	}()
	return func() {
		close(done)
		<-exited
		tr.noteCheckpoint()
	}
}
