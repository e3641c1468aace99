package rawexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/droverhq/drover/drivers/hostexec"
	"github.com/droverhq/drover/drivers/logrotate"
	"github.com/droverhq/drover/drivers/taskuser"
)

// The executor is the small process that sits between the agent and a
// raw_exec task so the task outlives the agent:
//
//	agent ──fork/exec, Setsid──> executor ──fork/exec, Setpgid──> task
//	  ^  spec on stdin, report on fd 3     │ waits, kills the group's
//	  └── reads <taskdir>/.drover-exit-*.json <─┘ leftovers, writes status
//
// It is the agent's own binary (or a test binary) re-executed with
// ExecutorEnv set: this package's init notices the variable and runs
// ExecutorMain instead of the program, so every binary that links the
// driver can serve as its executor. It runs in its own session, so a
// SIGKILL of the agent or a hang-up of its terminal does not reach it,
// and it writes the task's exit status to a file (atomically, by rename)
// for whichever agent asks later, its parent or a restarted one.

// ExecutorEnv, set to "1" in a process's environment, makes it run as a
// raw_exec executor (see ExecutorMain) before main.
const ExecutorEnv = "DROVER_RAWEXEC_EXECUTOR"

func init() {
	if os.Getenv(ExecutorEnv) == "1" {
		os.Exit(ExecutorMain())
	}
}

// executorSpec is what the driver hands the executor on its stdin.
type executorSpec struct {
	Path   string
	Args   []string
	Env    []string
	Dir    string
	Stdout string
	Stderr string
	// Logs bounds the Stdout and Stderr logs, which the executor writes
	// through a rotating writer (package drivers/logrotate).
	Logs       logrotate.Options
	StatusFile string
	// PIDFile is where the executor notes its own and the task's PIDs
	// while the task runs (see pidFile), for a client that lost its
	// state to find the task (KillOrphans); TaskID names the task in it.
	PIDFile string
	TaskID  string
	// User is the task's user (taskuser.User.String()); "" runs the
	// task as the executor's own user.
	User string
}

// executorReport is the executor's answer on fd 3 once the task started
// (PID) or could not (Err; Invalid when no retry can help).
type executorReport struct {
	PID     int
	Err     string
	Invalid bool
}

// ExecutorMain runs the executor: read the spec from stdin, start the
// task, report its PID on fd 3, wait for it, kill what it left in its
// group, write the status file, and return the executor's exit code.
func ExecutorMain() int {
	// Caught, not ignored: an ignored signal would stay ignored in the
	// task after exec.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGPIPE)
	go func() {
		for range sigs {
		}
	}()
	report := os.NewFile(3, "executor-report")
	var spec executorSpec
	buf, err := io.ReadAll(os.Stdin)
	if err == nil {
		err = json.Unmarshal(buf, &spec)
	}
	if err != nil {
		writeReport(report, executorReport{Err: fmt.Sprintf("executor spec: %v", err)})
		return 2
	}
	cmd, out, err := startTask(&spec)
	if err != nil {
		invalid := errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC)
		writeReport(report, executorReport{Err: err.Error(), Invalid: invalid})
		return 1
	}
	pid := cmd.Process.Pid
	writePIDFile(spec.PIDFile, spec.TaskID, pid)
	writeReport(report, executorReport{PID: pid})
	if hostexec.WaitExited(pid) {
		// The leader is a zombie: its group ID still cannot name anyone
		// else's group, so killing what the task left behind is safe.
		_ = signalGroup(pid, syscall.SIGKILL)
	}
	err = cmd.Wait()
	out.close()
	res := exitResult(cmd.ProcessState, err)
	if err := hostexec.WriteStateFile(spec.StatusFile, hostexec.ExitStatus{ExitCode: res.ExitCode, Signal: res.Signal}, 0o644); err != nil {
		return 3
	}
	if spec.PIDFile != "" {
		_ = os.Remove(spec.PIDFile)
	}
	return 0
}

// drainGrace bounds how long the executor copies output after the task
// exited, when something it left behind still holds its stdout or stderr.
const drainGrace = 250 * time.Millisecond

// taskOutput is the task's stdout and stderr.
type taskOutput struct{ stdout, stderr *logrotate.Stream }

// close copies what the task left in the pipes and closes the logs.
func (o *taskOutput) close() {
	for _, s := range []*logrotate.Stream{o.stdout, o.stderr} {
		if s != nil {
			_ = s.Close(drainGrace)
		}
	}
}

// startTask starts the task, its output piped into the rotated logs.
func startTask(spec *executorSpec) (*exec.Cmd, *taskOutput, error) {
	out := &taskOutput{}
	var err error
	if out.stdout, err = logrotate.OpenStream(spec.Stdout, spec.Logs); err != nil {
		return nil, nil, err
	}
	if out.stderr, err = logrotate.OpenStream(spec.Stderr, spec.Logs); err != nil {
		out.close()
		return nil, nil, err
	}
	attr := &syscall.SysProcAttr{Setpgid: true}
	if spec.User != "" {
		u, err := taskuser.Parse(spec.User)
		if err != nil {
			out.close()
			return nil, nil, err
		}
		attr.Credential = u.Credential()
	}
	cmd := &exec.Cmd{
		Path:        spec.Path,
		Args:        append([]string{spec.Path}, spec.Args...),
		Env:         spec.Env,
		Dir:         spec.Dir,
		Stdout:      out.stdout.TaskEnd(),
		Stderr:      out.stderr.TaskEnd(),
		SysProcAttr: attr,
	}
	err = cmd.Start()
	out.stdout.Started()
	out.stderr.Started()
	if err != nil {
		out.close()
		return nil, nil, err
	}
	return cmd, out, nil
}

func writeReport(f *os.File, r executorReport) {
	if f == nil {
		return
	}
	_ = json.NewEncoder(f).Encode(r)
	_ = f.Close()
}

// statusPath is where the executor of task id writes its status: in
// the task dir's parent, which the task's user cannot write.
func statusPath(taskDir, id string) string {
	dir := os.TempDir()
	if taskDir != "" {
		dir = filepath.Dir(filepath.Clean(taskDir))
	}
	name := strings.NewReplacer("/", "_", string(filepath.Separator), "_").Replace(id)
	return filepath.Join(dir, ".drover-exit-"+name+".json")
}
