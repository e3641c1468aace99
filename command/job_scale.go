package command

import (
	"fmt"
	"strconv"

	"github.com/droverhq/drover/api"
)

// JobScaleCommand is `drover job scale <job> [<group>] <count>`.
type JobScaleCommand struct{ Meta }

func (c *JobScaleCommand) Synopsis() string { return "Change the count of a job's group" }

func (c *JobScaleCommand) Help() string {
	return helpText(`
Usage: drover job scale [options] <job> [<group>] <count>

  Sets the count of a task group of the job (by ID or a unique prefix of
  one). The group may be left out when the job has only one. The servers
  create an evaluation that places or stops allocations to match.`, `
Scale Options:

  -detach
    Print the evaluation ID and return (the default: scale does not
    monitor the evaluation yet).`)
}

func (c *JobScaleCommand) Run(args []string) int {
	var detach bool
	fs := c.flagSet("job scale")
	fs.BoolVar(&detach, "detach", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return 1
	}
	if len(args) != 2 && len(args) != 3 {
		return c.usageError("job scale", "two or three arguments: <job> [<group>] <count>")
	}
	count, err := strconv.Atoi(args[len(args)-1])
	if err != nil || count < 0 {
		c.Ui.Error(fmt.Sprintf("Count %q: want a whole number, 0 or more.", args[len(args)-1]))
		return 1
	}
	client, ok := c.clientOrFail()
	if !ok {
		return 1
	}
	ctx, stop := c.context()
	defer stop()
	stub, ok := resolveJob(ctx, c.Ui, client, args[0])
	if !ok {
		return 1
	}
	group := ""
	if len(args) == 3 {
		group = args[1]
	} else {
		job, _, err := client.Jobs().Info(ctx, stub.ID, &api.QueryOptions{Namespace: stub.Namespace})
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error reading job %q: %s", stub.ID, err))
			return 1
		}
		if len(job.TaskGroups) != 1 {
			c.Ui.Error(fmt.Sprintf("Job %q has %d task groups: name the one to scale.", stub.ID, len(job.TaskGroups)))
			return 1
		}
		group = job.TaskGroups[0].Name
	}
	resp, _, err := client.Jobs().Scale(ctx, stub.ID, group, count, "", &api.WriteOptions{Namespace: stub.Namespace})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error scaling job %q group %q: %s", stub.ID, group, err))
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Job %q group %q scaled to %d; evaluation ID: %s", stub.ID, group, count, resp.EvalID))
	return 0
}
