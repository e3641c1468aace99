package command

import (
	"fmt"
	"sort"
	"strings"

	"github.com/droverhq/drover/structs"
)

// JobPlanCommand is `drover job plan FILE`.
type JobPlanCommand struct{ Meta }

func (c *JobPlanCommand) Synopsis() string {
	return "Dry-run a job file: what would be placed, where, on which GPUs"
}

func (c *JobPlanCommand) Help() string {
	return helpText(`
Usage: drover job plan [options] <path>

  Parses the job file at <path> ("-" reads stdin) and asks the scheduler
  what registering it would do, without registering it: whether the job is
  new or changed, each allocation it would place (node and GPUs), each it
  would stop, and, for what cannot be placed, how many nodes failed for
  each reason.

  Exit codes: 0 when everything would be placed, 1 on errors, 2 when some
  allocations could not be placed.`, `
Plan Options:

  -verbose
    Print full IDs.`)
}

func (c *JobPlanCommand) Run(args []string) int {
	var verbose bool
	fs := c.flagSet("job plan")
	fs.BoolVar(&verbose, "verbose", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("job plan", "one argument: <path>")
	}
	job, ok := c.loadJob(args[0], nil)
	if !ok {
		return exitError
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	resp, err := client.Jobs().Plan(ctx, job, true, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error planning job %q: %s", job.ID, err))
		return exitError
	}
	c.Ui.Output(formatPlan(job.ID, resp, verbose))
	if len(resp.FailedTGAllocs) > 0 {
		return exitNotPlaced
	}
	return exitPlaced
}

// formatPlan renders a dry run: the diff, the changes per group, each
// placement with its GPUs, each stop, and the placement failures.
func formatPlan(jobID string, resp *structs.JobPlanResponse, verbose bool) string {
	var b strings.Builder
	diff := "unknown"
	if resp.Diff != nil {
		diff = resp.Diff.Type
	}
	fmt.Fprintf(&b, "Job: %q (%s)\n", jobID, strings.ToLower(diff))
	if resp.Annotations != nil {
		groups := make([]string, 0, len(resp.Annotations.DesiredTGUpdates))
		for g := range resp.Annotations.DesiredTGUpdates {
			groups = append(groups, g)
		}
		sort.Strings(groups)
		for _, g := range groups {
			u := resp.Annotations.DesiredTGUpdates[g]
			if u == nil {
				continue
			}
			fmt.Fprintf(&b, "Task Group: %q (%d place, %d stop)\n", g, u.Place, u.Stop)
		}
	}
	for _, p := range resp.Placements {
		if p == nil {
			continue
		}
		fmt.Fprintf(&b, "  + %s on node %s (%s)%s\n", p.Name, shortID(p.NodeID, verbose), p.NodeName, gpuSuffix(p.GPUs))
	}
	for _, p := range resp.Stops {
		if p == nil {
			continue
		}
		fmt.Fprintf(&b, "  - %s on node %s: %s\n", p.Name, shortID(p.NodeID, verbose), p.Reason)
	}
	if len(resp.FailedTGAllocs) > 0 {
		b.WriteString("\nScheduler dry-run:\n")
		for _, line := range placementFailures(resp.FailedTGAllocs) {
			b.WriteString("- " + line + "\n")
		}
	} else {
		b.WriteString("\nScheduler dry-run:\n- All tasks successfully allocated.\n")
	}
	fmt.Fprintf(&b, "\nJob Modify Index: %d\n", resp.JobModifyIndex)
	return strings.TrimRight(b.String(), "\n")
}

func gpuSuffix(gpus []string) string {
	if len(gpus) == 0 {
		return ""
	}
	return ", GPUs " + strings.Join(gpus, ",")
}
