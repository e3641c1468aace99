package exec

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/logrotate"
	"github.com/droverhq/drover/drivers/taskuser"
)

// The task init. The driver starts every task as a copy of its own binary
// (/proc/self/exe) with initEnv set; the package's init function sees it
// and runs taskInit instead of the program. The init:
//
//  1. waits for the driver's go-ahead on fd 3 (sent once the driver has
//     put it in the task's cgroup, so user code never runs outside it);
//  2. opens the task's logs (logsEnv);
//  3. when isolated (it is PID 1 of a new PID namespace, in a new mount
//     namespace): builds the task's root and pivots into it
//     (root_linux.go), then finds the command there;
//  4. starts the command as the task's user (userEnv) with its output
//     piped through rotating writers, in its own process group, reports
//     "started <pid>" on fd 4 (or "invalid <why>" when the command is not
//     there to run), and catches the stop signals the driver sends to
//     that group so that it outlives the command and can report how it
//     ended;
//  5. when isolated, serves exec sessions (execinit_linux.go): the
//     commands of ExecTask run as its children, as the task's user;
//  6. reaps every child (orphans re-parent to it inside the namespace),
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

// userEnv carries the task's user (taskuser.User.String()) to the init.
const userEnv = "DROVER_EXEC_USER"

// probeInit checks what an isolated init relies on: PID 1 of its
// namespace, and a task root (of no host dirs) it can pivot into.
func probeInit() error {
	if pid := os.Getpid(); pid != 1 {
		return fmt.Errorf("pid namespace: init has pid %d, want 1", pid)
	}
	spec, err := decodeRootSpec(os.Getenv(rootEnv))
	if err != nil {
		return err
	}
	return setupRoot(spec)
}

// initSetup reads what the driver passed in the environment, removes it
// from what the command gets, and, when isolated, moves into the task's
// root. The credential is nil when the init keeps its own user.
func initSetup(isolated bool) (*syscall.Credential, error) {
	var cred *syscall.Credential
	if v := os.Getenv(userEnv); v != "" {
		u, err := taskuser.Parse(v)
		if err != nil {
			return nil, err
		}
		cred = u.Credential()
	}
	rootVal := os.Getenv(rootEnv)
	os.Unsetenv(userEnv)
	os.Unsetenv(rootEnv)
	if !isolated {
		return cred, nil
	}
	spec, err := decodeRootSpec(rootVal)
	if err != nil {
		return nil, err
	}
	// Nothing the task runs gains privileges through a setuid or
	// file-capability program (inherited, and never undone).
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("no_new_privs: %w", err)
	}
	return cred, setupRoot(spec)
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
	syscall.CloseOnExec(initStateDirFD)
	if isolated {
		syscall.CloseOnExec(initCtlFD)
		syscall.CloseOnExec(initListenFD)
	}
	if _, err := bufio.NewReader(ready).ReadByte(); err != nil {
		return 125 // the driver gave up on this start
	}
	ready.Close()
	signal.Notify(make(chan os.Signal, 16), forwardSignals...)
	if len(os.Args) < 2 {
		fmt.Fprintln(status, "error no command")
		return 126
	}
	// The logs are host paths: opened before the root changes.
	out, err := openInitLogs()
	if err != nil {
		fmt.Fprintf(status, "error %v\n", err)
		return 126
	}
	cred, err := initSetup(isolated)
	if err != nil {
		fmt.Fprintf(status, "error %v\n", err)
		return 126
	}
	statusName := os.Getenv(statusEnv)
	os.Unsetenv(statusEnv)
	held, err := releaseEnv() // loaderenv_linux.go
	if err != nil {
		fmt.Fprintf(status, "error %v\n", err)
		return 126
	}
	env := append(os.Environ(), held...)
	path := os.Args[1]
	if isolated {
		// Found in the task's root, as the task sees it.
		wd, _ := os.Getwd()
		if path, err = resolveCommand(path, env, wd); err != nil {
			fmt.Fprintf(status, "invalid %s\n", oneLine(strings.TrimPrefix(err.Error(), drivers.ErrInvalidConfig.Error()+": ")))
			return 127
		}
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		fmt.Fprintf(status, "error %v\n", err)
		return 126
	}
	proc, err := os.StartProcess(path, os.Args[1:], &os.ProcAttr{
		Env:   env,
		Files: []*os.File{devNull, out.stdout.TaskEnd(), out.stderr.TaskEnd()},
		Sys:   &syscall.SysProcAttr{Credential: cred},
	})
	devNull.Close()
	out.stdout.Started()
	out.stderr.Started()
	if err != nil {
		fmt.Fprintf(status, "error %v\n", err)
		return 127
	}
	fmt.Fprintf(status, "started %d\n", proc.Pid)
	r := newReaper(cred)
	if isolated {
		startExecServer(r)
		serveListener(r)
	}
	ws := r.reapUntil(proc.Pid)
	r.close()
	out.close()
	// The file first: an agent that died meanwhile (the pipe's reader)
	// learns the exit from it after its restart (recover_linux.go).
	writeStatusAt(initStateDirFD, statusName, ws)
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
