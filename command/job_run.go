package command

import (
	"fmt"

	"github.com/droverhq/drover/structs"
)

// Exit codes of job run and job stop.
const (
	// exitPlaced: every allocation the evaluation wanted was placed.
	exitPlaced = 0
	// exitError: bad input or the agent refused the request.
	exitError = 1
	// exitNotPlaced: the job was registered, but some allocations could not
	// be placed yet (a blocked evaluation waits for capacity) or the
	// evaluation failed.
	exitNotPlaced = 2
)

// JobRunCommand is `drover job run FILE`.
type JobRunCommand struct{ Meta }

func (c *JobRunCommand) Synopsis() string { return "Submit a job file and follow its placement" }

func (c *JobRunCommand) Help() string {
	return helpText(`
Usage: drover job run [options] <path>

  Parses the job file at <path> ("-" reads stdin) locally, registers the
  job, and follows the evaluation the servers create: it prints each
  allocation placed (node, group, GPUs) and, when allocations cannot be
  placed, why (constraints that filtered nodes, resources such as GPUs that
  ran out) and that a blocked evaluation will place them once capacity
  frees up.

  Exit codes: 0 when everything was placed (or with -detach, registered),
  1 on errors (bad job file, agent unreachable, registration refused),
  2 when the job was registered but some allocations could not be placed
  yet or the evaluation failed.`, `
Run Options:

  -detach
    Return after registering the job, printing the evaluation ID.

  -verbose
    Print full IDs.
`+jobInputHelp)
}

func (c *JobRunCommand) Run(args []string) int {
	var detach, verbose bool
	fs := c.flagSet("job run")
	var in jobInput
	in.flags(fs)
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("job run", "one argument: <path>")
	}
	job, ok := c.loadJobWith(args[0], nil, in)
	if !ok {
		return exitError
	}
	c.applyNamespace(job) // namespace.go
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	resp, _, err := client.Jobs().Register(ctx, job, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error submitting job %q: %s", job.ID, err))
		return exitError
	}
	if resp.Warnings != "" {
		c.Ui.Warn("Job warnings:\n" + resp.Warnings)
	}
	if resp.EvalID == "" {
		// Nothing to follow (a periodic or parameterized job, say).
		c.Ui.Output("Job registration successful; no evaluation was created")
		if line := nextLaunchLine(c.now(), job); line != "" { // job_status_periodic.go
			c.Ui.Output(line)
		}
		return exitPlaced
	}
	if detach {
		c.Ui.Output("Job registration successful")
		c.Ui.Output("Evaluation ID: " + resp.EvalID)
		return exitPlaced
	}
	c.Ui.Output(fmt.Sprintf("==> Evaluation %q created for job %q", shortID(resp.EvalID, verbose), job.ID))
	mon := &evalMonitor{ui: c.Ui, client: client, namespace: job.Namespace, verbose: verbose}
	code := mon.monitor(ctx, resp.EvalID)
	if code != exitPlaced || job.Type != structs.JobTypeService {
		return code
	}
	// A service job's version rolls out in a deployment (deployment_monitor.go).
	dm := &deploymentMonitor{ui: c.Ui, client: client, namespace: job.Namespace, verbose: verbose}
	return dm.monitor(ctx, job.ID, resp.JobModifyIndex)
}
