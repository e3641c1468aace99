package command

import (
	"fmt"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// JobAllocsCommand is `drover job allocs <job>`.
type JobAllocsCommand struct{ Meta }

func (c *JobAllocsCommand) Synopsis() string { return "List a job's allocations" }

func (c *JobAllocsCommand) Help() string {
	return helpText(`
Usage: drover job allocs [options] <job>

  Lists the allocations of a job (by ID or a unique prefix of one), newest
  first, with the GPUs they hold. Without -all, only those of the job's
  current instance (not of an earlier job of the same ID, since purged).`, `
Allocs Options:

  -all
    Include allocations of earlier instances of the job.

`+outputOptionsHelp+`

  -verbose
    Print full IDs.`)
}

func (c *JobAllocsCommand) Run(args []string) int {
	var all, verbose bool
	fs := c.flagSet("job allocs")
	fs.BoolVar(&all, "all", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	out := addOutputFlags(fs)
	args, ok := c.parse(fs, args)
	if !ok {
		return 1
	}
	if len(args) != 1 {
		return c.usageError("job allocs", "one argument: <job>")
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
	allocs, _, err := client.Jobs().Allocations(ctx, stub.ID, &api.QueryOptions{Namespace: stub.Namespace})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing allocations of %q: %s", stub.ID, err))
		return 1
	}
	if !all {
		allocs = currentInstance(allocs, stub.CreateIndex)
	}
	if out.set() {
		return c.outputFormatted(out, orEmptyList(allocs))
	}
	if len(allocs) == 0 {
		c.Ui.Output(fmt.Sprintf("No allocations placed for job %q", stub.ID))
		return 0
	}
	c.Ui.Output(formatJobAllocs(c.now(), allocs, verbose))
	return 0
}

// currentInstance keeps the allocations created since the job (of this
// ID) was: Nomad's job status and job allocs without -all-allocs.
func currentInstance(allocs []*structs.AllocListStub, jobCreateIndex uint64) []*structs.AllocListStub {
	var out []*structs.AllocListStub
	for _, a := range allocs {
		if a.CreateIndex >= jobCreateIndex {
			out = append(out, a)
		}
	}
	return out
}

func orEmptyList[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
