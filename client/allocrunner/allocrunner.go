package allocrunner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/logrotate"
	"github.com/droverhq/drover/structs"
)

// Task event types this package adds to those in structs.
const (
	TaskSetupFailure  = "Setup Failure"
	TaskSiblingFailed = "Sibling Task Failed"
	// TaskMaxRunTimeExceeded: the job's max_run_time passed; the task is
	// killed and fails.
	TaskMaxRunTimeExceeded = "Max Run Time Exceeded"
	// TaskReattached: after a client restart the task was found still
	// running (or ended meanwhile) and is watched again.
	TaskReattached = "Reattached"
	// TaskReattachFailed: after a client restart the task could not be
	// found again; it is dead and failed.
	TaskReattachFailed = "Reattach Failed"
)

// StateStore persists what a runner needs to be restored after a client
// restart (client/state.DB implements it). Errors are logged, not fatal:
// a runner whose state cannot be saved still runs.
type StateStore interface {
	PutAlloc(alloc *structs.Allocation) error
	PutTaskState(allocID, task string, s *structs.TaskState) error
	// PutTaskHandle stores the running attempt's handle; nil deletes it.
	PutTaskHandle(allocID, task string, h *drivers.TaskHandle) error
}

// Restored is what a StateStore held for an allocation when the client
// restarted: each task's last state and the handles of the attempts
// that were running.
type Restored struct {
	TaskStates  map[string]*structs.TaskState
	TaskHandles map[string]*drivers.TaskHandle
}

// maxTaskEvents caps each task's event list; the oldest are dropped.
const maxTaskEvents = 25

// Clock is the time source; tests may substitute one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Config configures one AllocRunner.
type Config struct {
	// Alloc is the allocation as the servers sent it (Job included).
	Alloc *structs.Allocation
	// DataDir is the client's data dir; the alloc dir is
	// DataDir/alloc/<alloc ID>.
	DataDir string
	// Drivers maps driver names to drivers.
	Drivers map[string]drivers.Driver
	// OnUpdate receives the allocation's client-side state (ID, NodeID,
	// JobID, Namespace, ClientStatus, ClientDescription, TaskStates) after
	// every change, in order. It is called with the runner's lock held:
	// it must not block and must not call back into the runner.
	OnUpdate func(*structs.Allocation)
	Logger   hclog.Logger
	Clock    Clock
	// Store, when set, receives the allocation, every task state change
	// and every running attempt's handle.
	Store StateStore
	// Restore, when set, makes the runner resume an allocation an earlier
	// client ran: tasks take their stored states, dead ones stay dead, and
	// running ones are re-attached through their driver (a
	// drivers.Recoverer) instead of started.
	Restore *Restored
	// GPUSharing, when set, enforces the GPU shares the allocation holds
	// (MPS daemons and limits, task events; gpu_sharing.go).
	GPUSharing GPUSharing
	// Users is which users tasks may run as (userpolicy.go).
	Users UserPolicy
	// Node is the node the allocation runs on, for ${node.*}, ${attr.*}
	// and ${meta.*} in task config and env (interpolate.go); nil leaves
	// them as written.
	Node *structs.Node
	// HostVolumes are the host volumes this client offers (volumes.go).
	HostVolumes map[string]*structs.ClientHostVolumeConfig
	// CheckpointRoot holds groups' checkpoint dirs (checkpoint.go).
	CheckpointRoot string
	// PreviousDone, when set, is closed once the allocation this one
	// replaces (PreviousAllocation) is dead on this client: a sticky
	// ephemeral disk's data moves over after it (sticky.go).
	PreviousDone <-chan struct{}
	// TaskFiles serves the template and artifact hooks (task_prestart.go).
	TaskFiles TaskFilesConfig
}

// AllocRunner runs one allocation. Create it with New, run it with Run in
// a goroutine the caller owns, stop it with Kill or an Update that sets
// DesiredStatus stop, and wait on WaitCh.
type AllocRunner struct {
	id       string
	allocDir string
	logger   hclog.Logger
	clock    Clock
	onUpdate func(*structs.Allocation)
	tasks    []*taskRunner // fixed in New
	waitCh   chan struct{}
	changed  chan struct{} // a task's state changed (lifecycle.go)
	store    StateStore
	restored bool
	sharing  GPUSharing
	shares   *gpuShares // set by Run before any task starts
	users    UserPolicy
	node     *structs.Node // read-only
	// hostVolumes and mounts: volumes.go; mounts is set by prepare.
	hostVolumes map[string]*structs.ClientHostVolumeConfig
	mounts      map[string][]*drivers.MountConfig
	// checkpointRoot and checkpoint: checkpoint.go; checkpoint is set
	// by prepare.
	checkpointRoot string
	checkpoint     *checkpointDir
	prevDone       <-chan struct{}
	files          TaskFilesConfig

	// startMu is held for reading by each task from its driver's start
	// until its handle is saved, and for writing by Detach (detach.go).
	startMu    sync.RWMutex
	detachCh   chan struct{} // closed by Detach
	detachOnce sync.Once

	mu     sync.Mutex
	alloc  *structs.Allocation
	states map[string]*structs.TaskState
	// setupErr, when set, fails the allocation before any task runs.
	setupErr error
	// detached: Detach was called; nothing more is saved or reported.
	detached bool
}

// AllocDir returns the directory of an allocation.
func AllocDir(dataDir, allocID string) string { return filepath.Join(dataDir, "alloc", allocID) }

// SharedDir returns the allocation's shared dir (DROVER_ALLOC_DIR).
func SharedDir(allocDir string) string { return filepath.Join(allocDir, "alloc") }

// TaskDir returns a task's working dir.
func TaskDir(allocDir, task string) string { return filepath.Join(allocDir, task) }

// LogBase returns the base name of a task's stdout (or stderr) log: the
// drivers write <base>.0, <base>.1, ..., rotated per the task's logs
// block (package drivers/logrotate).
func LogBase(allocDir, task string, stderr bool) string {
	kind := "stdout"
	if stderr {
		kind = "stderr"
	}
	return filepath.Join(SharedDir(allocDir), "logs", task+"."+kind)
}

// LogPath returns a task's current stdout (or stderr) log file: the one
// with the highest index, or <base>.0 before the task wrote any.
func LogPath(allocDir, task string, stderr bool) string {
	return logrotate.Current(LogBase(allocDir, task, stderr))
}

// LogFiles returns a task's existing stdout (or stderr) log files,
// oldest first.
func LogFiles(allocDir, task string, stderr bool) ([]string, error) {
	return logrotate.Files(LogBase(allocDir, task, stderr))
}

// New prepares a runner: every task of the allocation's group is
// pending with a Received event. Problems with the allocation itself
// (no job, unknown group, bad task names, unknown drivers) do not fail
// New; Run reports them as a failed allocation, as the servers need to
// hear about them.
func New(cfg *Config) (*AllocRunner, error) {
	if cfg == nil || cfg.Alloc == nil || cfg.Alloc.ID == "" {
		return nil, errors.New("allocrunner: missing allocation")
	}
	if cfg.DataDir == "" {
		return nil, errors.New("allocrunner: missing data dir")
	}
	alloc := cfg.Alloc.Copy()
	ar := &AllocRunner{
		id:       alloc.ID,
		allocDir: AllocDir(cfg.DataDir, alloc.ID),
		logger:   cfg.Logger,
		clock:    cfg.Clock,
		onUpdate: cfg.OnUpdate,
		waitCh:   make(chan struct{}),
		changed:  make(chan struct{}, 1),
		detachCh: make(chan struct{}),
		alloc:    alloc,
		states:   map[string]*structs.TaskState{},
		store:    cfg.Store,
		restored: cfg.Restore != nil,
		sharing:  cfg.GPUSharing,
		users:    cfg.Users,
		node:     cfg.Node,

		hostVolumes:    cfg.HostVolumes,
		checkpointRoot: cfg.CheckpointRoot,
		prevDone:       cfg.PreviousDone,
		files:          cfg.TaskFiles,
	}
	if ar.logger == nil {
		ar.logger = hclog.NewNullLogger()
	}
	ar.logger = ar.logger.With("alloc_id", alloc.ID)
	if ar.clock == nil {
		ar.clock = realClock{}
	}
	if ar.store != nil && !ar.restored {
		if err := ar.store.PutAlloc(alloc); err != nil {
			ar.logger.Warn("saving allocation", "error", err)
		}
	}
	tg, err := taskGroup(alloc)
	if err != nil {
		ar.setupErr = err
		return ar, nil
	}
	now := ar.clock.Now().UnixNano()
	for _, task := range tg.Tasks {
		ar.states[task.Name] = &structs.TaskState{
			State:  structs.TaskStatePending,
			Events: []*structs.TaskEvent{{Type: structs.TaskReceived, Time: now, Message: "Task received by client", DisplayMessage: "Task received by client"}},
		}
		if err := validTaskName(task.Name); err != nil {
			ar.setupErr = err
			continue
		}
		d := cfg.Drivers[task.Driver]
		tr := newTaskRunner(ar, task, d, lifecycleRestartTracker(tg.RestartPolicy, alloc.Job.Type, task))
		if r := cfg.Restore; r != nil {
			if s := r.TaskStates[task.Name]; s != nil {
				ar.states[task.Name] = s.Copy()
			}
			tr.restoredHandle = r.TaskHandles[task.Name]
		}
		ar.tasks = append(ar.tasks, tr)
	}
	return ar, nil
}

func taskGroup(alloc *structs.Allocation) (*structs.TaskGroup, error) {
	if alloc.Job == nil {
		return nil, errors.New("allocation carries no job")
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil {
		return nil, fmt.Errorf("job %q has no group %q", alloc.JobID, alloc.TaskGroup)
	}
	return tg, nil
}

// validTaskName rejects names that would escape or collide inside the
// alloc dir (the shared dir is called "alloc").
func validTaskName(name string) error {
	if name == "" || name == "." || name == ".." || name == "alloc" || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("task name %q cannot name a directory in the alloc dir", name)
	}
	return nil
}

// ID returns the allocation's ID.
func (ar *AllocRunner) ID() string { return ar.id }

// AllocDir returns this allocation's directory.
func (ar *AllocRunner) AllocDir() string { return ar.allocDir }

// WaitCh is closed when Run has returned: every task is dead.
func (ar *AllocRunner) WaitCh() <-chan struct{} { return ar.waitCh }

// Run runs the allocation and returns when every task is dead. Call it
// once.
func (ar *AllocRunner) Run() {
	defer close(ar.waitCh)
	if ar.restored {
		// Tell the servers where things stand, even if nothing changes.
		ar.mu.Lock()
		ar.notifyLocked()
		ar.mu.Unlock()
	}
	if err := ar.prepare(); err != nil {
		ar.logger.Error("allocation setup", "error", err)
		ar.failSetup(err)
		return
	}
	if err := ar.migrateSticky(); err != nil { // sticky.go
		ar.logger.Warn("sticky ephemeral disk", "error", err)
	}
	shares, err := ar.startGPUShares()
	if err != nil {
		ar.logger.Error("allocation setup", "error", err)
		ar.failSetup(err)
		return
	}
	defer func() {
		// Tasks left running by Detach keep their shares.
		if !ar.isDetached() || ar.allDead() {
			ar.stopGPUShares(shares)
		}
	}()
	ar.shares = shares
	ar.recordGPUShares(shares)
	ar.runTasks() // lifecycle.go
	ar.logger.Debug("allocation finished", "status", ar.Alloc().ClientStatus)
}

// runDeadline fires when the job's max_run_time has passed since the
// allocation's first task started (now, for one that has not started):
// nil without a max_run_time. It also returns the max_run_time.
func (ar *AllocRunner) runDeadline() (<-chan time.Time, time.Duration) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if ar.alloc.Job == nil || ar.alloc.Job.MaxRunTime <= 0 {
		return nil, 0
	}
	maxRun := ar.alloc.Job.MaxRunTime
	now := ar.clock.Now()
	start := now
	for _, s := range ar.states {
		if s != nil && !s.StartedAt.IsZero() && s.StartedAt.Before(start) {
			start = s.StartedAt
		}
	}
	return ar.clock.After(max(start.Add(maxRun).Sub(now), 0)), maxRun
}

// prepare checks the allocation and builds its directories.
func (ar *AllocRunner) prepare() error {
	ar.mu.Lock()
	err := ar.setupErr
	ar.mu.Unlock()
	if err != nil {
		return err
	}
	for _, tr := range ar.tasks {
		if tr.driver == nil {
			return fmt.Errorf("task %q: driver %q is not available on this node", tr.task.Name, tr.task.Driver)
		}
	}
	if tg, err := taskGroup(ar.Alloc()); err == nil {
		if ar.mounts, err = resolveMounts(tg, ar.hostVolumes); err != nil {
			return err
		}
		if err := ar.prepareCheckpoint(tg); err != nil {
			return err
		}
	}
	// Tasks run as users other than the agent's (nobody by default): the
	// shared data and tmp dirs are theirs to write, as in Nomad; logs
	// stay the agent's. Each task's dir is made its user's by its driver.
	dirs := map[string]os.FileMode{
		filepath.Join(SharedDir(ar.allocDir), "logs"): 0o755,
		filepath.Join(SharedDir(ar.allocDir), "data"): 0o777,
		filepath.Join(SharedDir(ar.allocDir), "tmp"):  0o777 | os.ModeSticky,
	}
	for _, tr := range ar.tasks {
		// Checked when the job was registered; checked again here, as
		// the name becomes a path (a job from an older server).
		if err := structs.CheckTaskName(tr.task.Name); err != nil {
			return fmt.Errorf("task %q: %w", tr.task.Name, err)
		}
		dirs[TaskDir(ar.allocDir, tr.task.Name)] = 0o755
	}
	for d, mode := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("alloc dir: %w", err)
		}
		if err := os.Chmod(d, mode); err != nil { // past the umask
			return fmt.Errorf("alloc dir: %w", err)
		}
	}
	ar.mu.Lock()
	job := ar.alloc.Job
	ar.mu.Unlock()
	for _, tr := range ar.tasks {
		if err := writeDispatchPayload(job, tr.task, TaskDir(ar.allocDir, tr.task.Name)); err != nil { // dispatch.go
			return err
		}
	}
	return nil
}

// failSetup marks every task dead and failed with err, and the
// allocation failed.
func (ar *AllocRunner) failSetup(err error) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.setupErr = err
	now := ar.clock.Now()
	for _, s := range ar.states {
		s.State, s.Failed, s.FinishedAt = structs.TaskStateDead, true, now
		appendEvent(s, &structs.TaskEvent{Type: TaskSetupFailure, Time: now.UnixNano(), Message: err.Error(), DisplayMessage: err.Error()})
	}
	for name := range ar.states {
		ar.persistLocked(name)
	}
	ar.notifyLocked()
}

func (ar *AllocRunner) taskFailed(task string) bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	s := ar.states[task]
	return s != nil && s.Failed
}

// Update hands the runner a newer version of its allocation from the
// servers. DesiredStatus stop kills the tasks.
func (ar *AllocRunner) Update(alloc *structs.Allocation) {
	ar.mu.Lock()
	ar.alloc = alloc.Copy()
	if ar.store != nil && !ar.detached {
		if err := ar.store.PutAlloc(ar.alloc); err != nil {
			ar.logger.Warn("saving allocation", "error", err)
		}
	}
	ar.mu.Unlock()
	switch {
	case alloc.DesiredStatus != structs.AllocDesiredStatusStop:
	case alloc.PreemptedByAllocation != "":
		ar.preempt(alloc)
	default:
		ar.Kill("allocation stopped by the servers")
	}
}

// writeShared writes a file of the shared alloc dir through an os.Root:
// a task that can write that dir may have left a symlink there.
func writeShared(allocDir, name string, data []byte) error {
	r, err := os.OpenRoot(SharedDir(allocDir))
	if err != nil {
		return err
	}
	defer r.Close()
	return r.WriteFile(name, data, 0o644)
}

// preempt stops every task of a preempted allocation: it writes
// DROVER_PREEMPTED (containing 1) into the shared alloc dir, so the task
// can tell, and each task gets a Preempted event with its kill signal and
// the grace time (kill_timeout) it has to checkpoint before the force
// kill.
func (ar *AllocRunner) preempt(alloc *structs.Allocation) {
	if err := writeShared(ar.allocDir, structs.EnvPreempted, []byte("1\n")); err != nil {
		ar.logger.Warn("mark allocation preempted", "error", err)
	}
	reason := alloc.DesiredDescription
	for _, tr := range ar.tasks {
		tr.kill(structs.TaskPreempted, reason)
	}
}

// Kill stops every task with its kill signal and timeout. It returns at
// once; wait on WaitCh.
func (ar *AllocRunner) Kill(reason string) {
	for _, tr := range ar.tasks {
		if !tr.task.IsHook(structs.TaskLifecycleHookPoststop) { // they run next
			tr.kill(structs.TaskKilling, reason)
		}
	}
}

// Alloc returns a copy of the allocation with the client's view
// (ClientStatus, TaskStates) filled in.
func (ar *AllocRunner) Alloc() *structs.Allocation {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	a := ar.alloc.Copy()
	ar.fillClientStateLocked(a)
	return a
}

// LogPath returns the current log file of a task of this allocation.
func (ar *AllocRunner) LogPath(task string, stderr bool) (string, error) {
	if !ar.hasTask(task) {
		return "", fmt.Errorf("allocation %s has no task %q: %w", ar.id, task, structs.ErrNotFound)
	}
	return LogPath(ar.allocDir, task, stderr), nil
}

// LogFiles returns the log files of a task of this allocation, oldest
// first.
func (ar *AllocRunner) LogFiles(task string, stderr bool) ([]string, error) {
	if !ar.hasTask(task) {
		return nil, fmt.Errorf("allocation %s has no task %q: %w", ar.id, task, structs.ErrNotFound)
	}
	return LogFiles(ar.allocDir, task, stderr)
}

func (ar *AllocRunner) hasTask(name string) bool {
	for _, tr := range ar.tasks {
		if tr.task.Name == name {
			return true
		}
	}
	return false
}

// mutate changes one task's state and reports the allocation.
func (ar *AllocRunner) mutate(task string, fn func(s *structs.TaskState)) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	fn(ar.states[task])
	ar.persistLocked(task)
	ar.notifyLocked()
	ar.signalChange()
}

// persistLocked saves one task's state. It runs under ar.mu so that
// saves of one task land in the order of its changes.
func (ar *AllocRunner) persistLocked(task string) {
	s := ar.states[task]
	if ar.store == nil || s == nil || ar.detached {
		return
	}
	if err := ar.store.PutTaskState(ar.id, task, s); err != nil {
		ar.logger.Warn("saving task state", "task", task, "error", err)
	}
}

// persistHandle saves (or, with nil, deletes) a task's running handle.
func (ar *AllocRunner) persistHandle(task string, h *drivers.TaskHandle) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if ar.store == nil || ar.detached {
		return
	}
	if err := ar.store.PutTaskHandle(ar.id, task, h); err != nil {
		ar.logger.Warn("saving task handle", "task", task, "error", err)
	}
}

func (ar *AllocRunner) fillClientStateLocked(a *structs.Allocation) {
	a.ClientStatus, a.ClientDescription = clientStatus(ar.states, poststopPending(ar.tasks, ar.states))
	if ar.setupErr != nil {
		a.ClientStatus, a.ClientDescription = structs.AllocClientStatusFailed, ar.setupErr.Error()
	}
	a.TaskStates = make(map[string]*structs.TaskState, len(ar.states))
	for k, v := range ar.states {
		a.TaskStates[k] = v.Copy()
	}
}

func (ar *AllocRunner) notifyLocked() {
	a := &structs.Allocation{
		ID:        ar.alloc.ID,
		NodeID:    ar.alloc.NodeID,
		JobID:     ar.alloc.JobID,
		Namespace: ar.alloc.Namespace,
	}
	ar.fillClientStateLocked(a)
	if ar.onUpdate != nil && !ar.detached {
		ar.onUpdate(a)
	}
}

func appendEvent(s *structs.TaskState, ev *structs.TaskEvent) {
	s.Events = append(s.Events, ev)
	if n := len(s.Events); n > maxTaskEvents {
		s.Events = append([]*structs.TaskEvent(nil), s.Events[n-maxTaskEvents:]...)
	}
}
