package command

import (
	"fmt"

	"github.com/droverhq/drover/api"
)

// JobPeriodicForceCommand is `drover job periodic force <job>`.
type JobPeriodicForceCommand struct{ Meta }

func (c *JobPeriodicForceCommand) Synopsis() string { return "Launch a periodic job now" }

func (c *JobPeriodicForceCommand) Help() string {
	return helpText(`
Usage: drover job periodic force [options] <job>

  Launches a child of the periodic job <job> now, whatever its schedule
  and prohibit_overlap, and follows its evaluation unless -detach.`, `
Force Options:

  -detach
    Return after the launch, printing the evaluation ID.

  -verbose
    Print full IDs.`)
}

func (c *JobPeriodicForceCommand) Run(args []string) int {
	var detach, verbose bool
	fs := c.flagSet("job periodic force")
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("job periodic force", "one argument: <job>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	job, ok := resolveJob(ctx, c.Ui, client, args[0])
	if !ok {
		return exitError
	}
	resp, _, err := client.Jobs().PeriodicForce(ctx, job.ID, &api.WriteOptions{Namespace: job.Namespace})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error forcing periodic job %q: %s", job.ID, err))
		return exitError
	}
	if detach {
		c.Ui.Output("Force periodic successful")
		c.Ui.Output("Evaluation ID: " + resp.EvalID)
		return exitPlaced
	}
	c.Ui.Output(fmt.Sprintf("==> Evaluation %q created to launch job %q", shortID(resp.EvalID, verbose), job.ID))
	mon := &evalMonitor{ui: c.Ui, client: client, namespace: job.Namespace, verbose: verbose}
	return mon.monitor(ctx, resp.EvalID)
}
