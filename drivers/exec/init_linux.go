package exec

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/droverhq/drover/drivers/logrotate"
)

// The task init. The driver starts every task as a copy of its own binary
// (/proc/self/exe) with initEnv set; the package's init function sees it
// and runs taskInit instead of the program. The init:
//
//  1. waits for the driver's go-ahead on fd 3 (sent once the driver has
//     put it in the task's cgroup, so user code never runs outside it);
//  2. when isolated (it is PID 1 of a new PID namespace, in a new mount
//     namespace): makes every mount private and mounts a fresh /proc;
//  3. opens the task's logs (logsEnv) and starts the task's command with
//     its output piped through rotating writers in its own process group, reports
//     "started <pid>" on fd 4, and catches the stop signals the driver
//     sends to that group so that it outlives the command and can report
//     how it ended;
//  4. when isolated, serves exec sessions (execinit_linux.go): the
//     commands of ExecTask run as its children;
//  5. reaps every child (orphans re-parent to it inside the namespace),
//     copies what is left of the command's output, writes "exit N" or "signal N" for the command on fd 4, kills what
//     is left of the group and exits. In a PID namespace the kernel kills
//     every remaining process when the init exits.
const (
	initEnv = "DROVER_EXEC_INIT"

	initIsolated = "isolated" // namespaces: mount setup, then run
	initPlain    = "plain"    // fallback: no namespaces, just run
	initProbe    = "probe"    // check the namespaces work, run nothing
)

// forwardSignals are caught by the init so they do not end it: the
// driver sends them to the whole process group, the command gets its
// own copy.
var forwardSignals = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGABRT, syscall.SIGALRM,
	syscall.SIGWINCH, syscall.SIGPIPE,
}

func init() {
	mode, ok := os.LookupEnv(initEnv)
	if !ok {
		return
	}
	os.Unsetenv(initEnv)
	// syscall.Exit, not os.Exit: the init has no deferred work, and a
	// race-enabled binary would otherwise linger a second at exit.
	if mode == initProbe {
		if err := probeInit(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			syscall.Exit(1)
		}
		syscall.Exit(0)
	}
	syscall.Exit(taskInit(mode == initIsolated))
}

// probeInit checks what an isolated init relies on.
func probeInit() error {
	if pid := os.Getpid(); pid != 1 {
		return fmt.Errorf("pid namespace: init has pid %d, want 1", pid)
	}
	return setupMounts()
}

// setupMounts makes the mount namespace private (nothing mounted here
// reaches the host, nothing the host mounts later shows up here) and
// mounts a /proc that shows the task's PID namespace.
func setupMounts() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	flags := uintptr(syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC)
	if err := syscall.Mount("proc", "/proc", "proc", flags, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return nil
}

// taskInit runs the command in os.Args[1:] and returns the init's exit
// code; the command's own outcome goes to the status pipe.
func taskInit(isolated bool) int {
	ready := os.NewFile(3, "ready")
	status := os.NewFile(4, "status")
	// The command must not inherit the status pipe, or a process it
	// leaves behind would keep the driver from seeing the end; nor the
	// exec control socket.
	syscall.CloseOnExec(4)
	if isolated {
		syscall.CloseOnExec(initCtlFD)
	}
	if _, err := bufio.NewReader(ready).ReadByte(); err != nil {
		return 125 // the driver gave up on this start
	}
	ready.Close()
	signal.Notify(make(chan os.Signal, 16), forwardSignals...)
	if isolated {
		if err := setupMounts(); err != nil {
			fmt.Fprintf(status, "error %v\n", err)
			return 126
		}
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(status, "error no command")
		return 126
	}
	out, err := openInitLogs()
	if err != nil {
		fmt.Fprintf(status, "error %v\n", err)
		return 126
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		fmt.Fprintf(status, "error %v\n", err)
		return 126
	}
	proc, err := os.StartProcess(os.Args[1], os.Args[1:], &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{devNull, out.stdout.TaskEnd(), out.stderr.TaskEnd()},
	})
	devNull.Close()
	out.stdout.Started()
	out.stderr.Started()
	if err != nil {
		fmt.Fprintf(status, "error %v\n", err)
		return 127
	}
	fmt.Fprintf(status, "started %d\n", proc.Pid)
	r := newReaper()
	if isolated {
		startExecServer(r)
	}
	ws := r.reapUntil(proc.Pid)
	r.close()
	out.close()
	if ws.Signaled() {
		fmt.Fprintf(status, "signal %d\n", int(ws.Signal()))
	} else {
		fmt.Fprintf(status, "exit %d\n", ws.ExitStatus())
	}
	status.Close()
	// Whatever the command left in the group dies with it. In a PID
	// namespace the init ignores this signal; outside one it ends here.
	_ = syscall.Kill(0, syscall.SIGKILL)
	return 0
}

// logsEnv carries the task's log paths and limits (JSON initLogs) from
// the driver to the init, which writes the command's output through
// rotating writers (package drivers/logrotate).
const logsEnv = "DROVER_EXEC_LOGS"

// drainGrace bounds how long the init copies output after the command
// exited, when something it left behind still holds its stdout.
const drainGrace = 250 * time.Millisecond

// initLogs is logsEnv's value.
type initLogs struct {
	Stdout, Stderr string
	Options        logrotate.Options
}

// initOutput is the command's stdout and stderr.
type initOutput struct{ stdout, stderr *logrotate.Stream }

// openInitLogs opens the logs named in logsEnv and removes it from the
// environment the command gets.
func openInitLogs() (*initOutput, error) {
	var spec initLogs
	if v := os.Getenv(logsEnv); v != "" {
		if err := json.Unmarshal([]byte(v), &spec); err != nil {
			return nil, fmt.Errorf("%s: %w", logsEnv, err)
		}
	}
	os.Unsetenv(logsEnv)
	stdout, err := logrotate.OpenStream(spec.Stdout, spec.Options)
	if err != nil {
		return nil, err
	}
	stderr, err := logrotate.OpenStream(spec.Stderr, spec.Options)
	if err != nil {
		_ = stdout.Close(0)
		return nil, err
	}
	return &initOutput{stdout: stdout, stderr: stderr}, nil
}

// close copies what the command left in the pipes and closes the logs.
func (o *initOutput) close() {
	_ = o.stdout.Close(drainGrace)
	_ = o.stderr.Close(drainGrace)
}
