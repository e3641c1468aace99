package command

import (
	"fmt"

	"github.com/droverhq/drover/api"
)

// AllocStopCommand is `drover alloc stop [-detach] ID`.
type AllocStopCommand struct{ Meta }

func (c *AllocStopCommand) Synopsis() string { return "Stop an allocation; the servers replace it" }

func (c *AllocStopCommand) Help() string {
	return helpText(`
Usage: drover alloc stop [options] <alloc>

  Stops the allocation with ID <alloc> (or a unique prefix of one): its
  tasks are killed and the scheduler places a new allocation of the same
  name in its place. Follows the evaluation that does unless -detach is
  given.`, `
Stop Options:

  -detach
    Return after the allocation is stopped, printing the evaluation ID.

  -verbose
    Print full IDs.`)
}

func (c *AllocStopCommand) Run(args []string) int {
	var detach, verbose bool
	fs := c.flagSet("alloc stop")
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("alloc stop", "one argument: <alloc>")
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
	resp, _, err := client.Allocations().Stop(ctx, alloc.ID, &api.WriteOptions{Namespace: alloc.Namespace})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error stopping allocation %q: %s", shortID(alloc.ID, verbose), err))
		return exitError
	}
	if detach {
		c.Ui.Output(fmt.Sprintf("Allocation %q stopped", shortID(alloc.ID, verbose)))
		c.Ui.Output("Evaluation ID: " + resp.EvalID)
		return exitPlaced
	}
	c.Ui.Output(fmt.Sprintf("==> Evaluation %q created to replace allocation %q", shortID(resp.EvalID, verbose), shortID(alloc.ID, verbose)))
	mon := &evalMonitor{ui: c.Ui, client: client, namespace: alloc.Namespace, verbose: verbose}
	return mon.monitor(ctx, resp.EvalID)
}
