package rawexec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/hostexec"
)

// startExecutor starts the executor for spec and waits for its report:
// the task's PID, or why the task could not start. It also returns the
// executor's start time, which names it across PID reuse.
func (d *Driver) startExecutor(spec *executorSpec) (*task, uint64, error) {
	path := d.cfg.ExecutorPath
	if path == "" {
		var err error
		if path, err = os.Executable(); err != nil {
			return nil, 0, fmt.Errorf("executor binary: %w", err)
		}
	}
	in, err := json.Marshal(spec)
	if err != nil {
		return nil, 0, err
	}
	_ = os.Remove(spec.StatusFile) // from an earlier run of the same ID
	rr, rw, err := os.Pipe()
	if err != nil {
		return nil, 0, fmt.Errorf("executor pipe: %w", err)
	}
	defer rr.Close()
	cmd := &exec.Cmd{
		Path: path,
		Args: []string{path, "raw_exec-executor"},
		// GORACE: a race-enabled binary (tests) would otherwise sleep a
		// second at exit, delaying every task's result.
		Env:        []string{ExecutorEnv + "=1", "GORACE=atexit_sleep_ms=0"},
		Stdin:      bytes.NewReader(in),
		ExtraFiles: []*os.File{rw},
		// Its own session: the agent's death, or its terminal's, must
		// not reach the executor.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	rw.Close()
	if err != nil {
		return nil, 0, fmt.Errorf("executor: %w", err)
	}
	shimStart, _ := hostexec.ProcStart(cmd.Process.Pid)
	var rep executorReport
	if err := json.NewDecoder(rr).Decode(&rep); err != nil {
		werr := cmd.Wait()
		return nil, 0, fmt.Errorf("executor ended (%v) before reporting: %w", werr, err)
	}
	if rep.Err != "" {
		_ = cmd.Wait()
		if rep.Invalid {
			return nil, 0, fmt.Errorf("%w: %s", drivers.ErrInvalidConfig, rep.Err)
		}
		return nil, 0, fmt.Errorf("executor: %s", rep.Err)
	}
	t := &task{pid: rep.PID, shimPID: cmd.Process.Pid, statusFile: spec.StatusFile, done: make(chan struct{})}
	go t.waitChild(cmd)
	return t, shimStart, nil
}
