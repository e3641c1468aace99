package command

import (
	"fmt"
	"strings"
)

// AllocSignalCommand is `drover alloc signal [-s SIGNAL] [-task T] ALLOC [TASK]`.
type AllocSignalCommand struct{ Meta }

func (c *AllocSignalCommand) Synopsis() string { return "Send a signal to an allocation's tasks" }

func (c *AllocSignalCommand) Help() string {
	return helpText(`
Usage: drover alloc signal [options] <alloc> [<task>]

  Sends a signal to the running tasks of the allocation with ID <alloc>
  (or a unique prefix of one), or only to <task> when given. As in Nomad
  the signal is SIGKILL unless -s names another; what a killed task does
  next is up to its group's restart policy. Any agent reaches any
  allocation: the servers route the request to the allocation's node.`, `
Signal Options:

  -s <signal>
    The signal to send, such as SIGHUP, SIGUSR1 or HUP (default SIGKILL).

  -task <name>
    The task to signal, as an alternative to the <task> argument.`)
}

func (c *AllocSignalCommand) Run(args []string) int {
	var sig, task string
	fs := c.flagSet("alloc signal")
	fs.StringVar(&sig, "s", "SIGKILL", "")
	fs.StringVar(&task, "task", "", "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	id, task, ok := allocTaskArgs(args, task)
	if !ok {
		return c.usageError("alloc signal", "<alloc> and at most one task (argument or -task)")
	}
	if strings.TrimSpace(sig) == "" {
		return c.usageError("alloc signal", "a signal name with -s")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	alloc, ok := c.allocWithTask(ctx, client, id, task)
	if !ok {
		return exitError
	}
	if err := client.Allocations().Signal(ctx, alloc.ID, task, sig); err != nil {
		c.Ui.Error(fmt.Sprintf("Error signalling allocation %q: %s", shortID(alloc.ID, false), err))
		return exitError
	}
	what := "all running tasks"
	if task != "" {
		what = fmt.Sprintf("task %q", task)
	}
	c.Ui.Output(fmt.Sprintf("Sent %s to %s of allocation %q", sig, what, shortID(alloc.ID, false)))
	return 0
}
