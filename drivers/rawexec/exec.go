package rawexec

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/hostexec"
)

// ExecTask implements drivers.Execer: the command runs as a child of the
// agent (not of the task's executor: it need not outlive the agent, its
// streams do not), in its own process group, with the task's
// environment, working dir and user. What
// it leaves in its group is killed when it exits; it is killed, group
// and all, when ctx ends or the task ends.
func (d *Driver) ExecTask(ctx context.Context, taskID string, opts *drivers.ExecOptions) (*drivers.ExecResult, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	t, err := d.lookup(taskID)
	if err != nil {
		return nil, err
	}
	if t.hasEnded() {
		return nil, fmt.Errorf("exec in %s: %w", taskID, drivers.ErrTaskNotRunning)
	}
	if t.env == nil {
		return nil, fmt.Errorf("exec in %s: the task was recovered without its config, so its environment is unknown", taskID)
	}
	path, err := lookPath(opts.Command[0], t.env["PATH"], t.dir)
	if err != nil {
		return nil, fmt.Errorf("exec in %s: %w", taskID, err)
	}
	if t.user == nil {
		return nil, fmt.Errorf("exec in %s: the task's user is unknown", taskID)
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        opts.Command,
		Env:         (&drivers.TaskConfig{Env: t.env}).EnvList(),
		Dir:         t.dir,
		SysProcAttr: &syscall.SysProcAttr{Credential: t.user.Credential()},
	}
	res, err := hostexec.Run(ctx, cmd, opts, t.done)
	if err != nil {
		return nil, fmt.Errorf("exec in %s: %w", taskID, err)
	}
	return res, nil
}

// hasEnded reports whether the task is known to have exited.
func (t *task) hasEnded() bool {
	select {
	case <-t.done:
		return true
	default:
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ended
}
