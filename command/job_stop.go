package command

import (
	"fmt"

	"github.com/droverhq/drover/api"
)

// JobStopCommand is `drover job stop [-purge] [-detach] ID`.
type JobStopCommand struct{ Meta }

func (c *JobStopCommand) Synopsis() string { return "Stop a running job" }

func (c *JobStopCommand) Help() string {
	return helpText(`
Usage: drover job stop [options] <job>

  Stops the job with ID <job> (or a unique prefix of one): its allocations
  are stopped and their GPUs released. The job stays listed as dead unless
  -purge is given. Follows the evaluation that stops the allocations
  unless -detach is given.`, `
Stop Options:

  -purge
    Remove the job from the servers, not only stop it.

  -detach
    Return after the job is deregistered, printing the evaluation ID.

  -verbose
    Print full IDs.`)
}

func (c *JobStopCommand) Run(args []string) int {
	var purge, detach, verbose bool
	fs := c.flagSet("job stop")
	fs.BoolVar(&purge, "purge", false, "")
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("job stop", "one argument: <job>")
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
	resp, _, err := client.Jobs().Deregister(ctx, job.ID, purge, &api.WriteOptions{Namespace: job.Namespace})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error deregistering job %q: %s", job.ID, err))
		return exitError
	}
	if resp.EvalID == "" {
		c.Ui.Output(fmt.Sprintf("Job %q stopped; nothing to evaluate", job.ID))
		return exitPlaced
	}
	if detach {
		c.Ui.Output(fmt.Sprintf("Job %q deregistered", job.ID))
		c.Ui.Output("Evaluation ID: " + resp.EvalID)
		return exitPlaced
	}
	c.Ui.Output(fmt.Sprintf("==> Evaluation %q created to stop job %q", shortID(resp.EvalID, verbose), job.ID))
	mon := &evalMonitor{ui: c.Ui, client: client, namespace: job.Namespace, verbose: verbose}
	return mon.monitor(ctx, resp.EvalID)
}
