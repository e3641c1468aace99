package command

import (
	"context"
	"fmt"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// AllocRestartCommand is `drover alloc restart [-task T] ID [TASK]`.
type AllocRestartCommand struct{ Meta }

func (c *AllocRestartCommand) Synopsis() string { return "Restart an allocation's tasks in place" }

func (c *AllocRestartCommand) Help() string {
	return helpText(`
Usage: drover alloc restart [options] <alloc> [<task>]

  Restarts the running tasks of the allocation with ID <alloc> (or a
  unique prefix of one) in place, on the same node: each is killed and
  started again at once. Only <task> is restarted when given. The restart
  is recorded as a "Restart Signaled" task event and does not count
  against the group's restart policy. Any agent reaches any allocation:
  the servers route the request to the allocation's node.`, `
Restart Options:

  -task <name>
    The task to restart, as an alternative to the <task> argument.`)
}

func (c *AllocRestartCommand) Run(args []string) int {
	var task string
	fs := c.flagSet("alloc restart")
	fs.StringVar(&task, "task", "", "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	id, task, ok := allocTaskArgs(args, task)
	if !ok {
		return c.usageError("alloc restart", "<alloc> and at most one task (argument or -task)")
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
	if _, err := client.Allocations().Restart(ctx, alloc.ID, task, &api.WriteOptions{Namespace: alloc.Namespace}); err != nil {
		c.Ui.Error(fmt.Sprintf("Error restarting allocation %q: %s", shortID(alloc.ID, false), err))
		return exitError
	}
	what := "All running tasks"
	if task != "" {
		what = fmt.Sprintf("Task %q", task)
	}
	c.Ui.Output(fmt.Sprintf("%s of allocation %q restarted", what, shortID(alloc.ID, false)))
	return exitPlaced
}

// hasTask reports whether the allocation's group has the task (true when
// the allocation carries no job to tell).
// allocTaskArgs reads "<alloc> [<task>]" with the task from -task as an
// alternative; ok is false for any other shape.
func allocTaskArgs(args []string, flagTask string) (id, task string, ok bool) {
	switch {
	case len(args) == 1:
		return args[0], flagTask, true
	case len(args) == 2 && flagTask == "":
		return args[0], args[1], true
	}
	return "", "", false
}

// allocWithTask reads the allocation id (or a unique prefix) and checks
// that it has task when one is named, saying what is wrong otherwise.
func (m *Meta) allocWithTask(ctx context.Context, client *api.Client, id, task string) (*structs.Allocation, bool) {
	alloc, _, err := client.Allocations().Info(ctx, id, nil)
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error reading allocation %q: %s", id, err))
		return nil, false
	}
	if task != "" && !hasTask(alloc, task) {
		m.Ui.Error(fmt.Sprintf("Allocation %q has no task %q", shortID(alloc.ID, false), task))
		return nil, false
	}
	return alloc, true
}

func hasTask(alloc *structs.Allocation, task string) bool {
	if alloc.Job == nil {
		return true
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil {
		return true
	}
	for _, t := range tg.Tasks {
		if t.Name == task {
			return true
		}
	}
	return false
}
