package command

import (
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
	if len(args) < 1 || len(args) > 2 || (len(args) == 2 && task != "") {
		return c.usageError("alloc restart", "<alloc> and at most one task (argument or -task)")
	}
	if len(args) == 2 {
		task = args[1]
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	alloc, _, err := client.Allocations().Info(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading allocation %q: %s", args[0], err))
		return exitError
	}
	if task != "" && !hasTask(alloc, task) {
		c.Ui.Error(fmt.Sprintf("Allocation %q has no task %q", shortID(alloc.ID, false), task))
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
