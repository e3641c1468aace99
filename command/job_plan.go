package command

import (
	"fmt"
	"sort"
	"strings"

	"github.com/droverhq/drover/api"
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
  new or changed (and, when changed, each field that differs from the
  running version), per task group each allocation it would place (node
  and GPUs) and each it would stop, and, for what cannot be placed, how
  many nodes were evaluated and how many failed for each reason.

  Exit codes: 0 when everything would be placed, 1 on errors, 2 when some
  allocations could not be placed.`, `
Plan Options:

  -verbose
    Print full IDs.
`+jobInputHelp)
}

func (c *JobPlanCommand) Run(args []string) int {
	var verbose bool
	fs := c.flagSet("job plan")
	var in jobInput
	in.flags(fs)
	fs.BoolVar(&verbose, "verbose", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("job plan", "one argument: <path>")
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
	resp, err := client.Jobs().Plan(ctx, job, true, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error planning job %q: %s", job.ID, err))
		return exitError
	}
	var diff []string
	if resp.Diff != nil && resp.Diff.Type == structs.DiffTypeEdited {
		old, _, err := client.Jobs().Info(ctx, job.ID, &api.QueryOptions{Namespace: job.Namespace})
		if err != nil {
			c.Ui.Warn(fmt.Sprintf("Warning: no field diff, the current job could not be read: %s", err))
		} else {
			diff = specDiff(old, job)
		}
	}
	c.Ui.Output(formatPlan(job.ID, resp, diff, verbose))
	if resp.Warnings != "" {
		c.Ui.Warn("Job warnings:\n" + resp.Warnings)
	}
	if len(resp.FailedTGAllocs) > 0 {
		return exitNotPlaced
	}
	return exitPlaced
}

// formatPlan renders a dry run: the diff (its type, then the fields that
// change), per task group the changes with each placement and its GPUs
// and each stop, then the placement failures with node counts per reason.
//
//	Job: "train" (edited)
//	  ~ TaskGroups["train"].Count: 1 => 2
//
//	Task Group: "train" (1 place, 0 stop)
//	  + train.train[1] on node 5e6f7a8b (gpu-node-1), GPUs GPU-...,GPU-...
//
//	Scheduler dry-run:
//	- All tasks successfully allocated.
func formatPlan(jobID string, resp *structs.JobPlanResponse, diff []string, verbose bool) string {
	var b strings.Builder
	kind := "unknown"
	if resp.Diff != nil {
		kind = resp.Diff.Type
	}
	fmt.Fprintf(&b, "Job: %q (%s)\n", jobID, strings.ToLower(kind))
	for _, line := range diff {
		b.WriteString("  " + line + "\n")
	}
	for _, g := range planGroups(resp) {
		b.WriteString("\n" + formatPlanGroup(g, resp, verbose))
	}
	if len(resp.Preemptions) > 0 {
		fmt.Fprintf(&b, "\nPreemptions (%d):\n", len(resp.Preemptions))
		for _, p := range resp.Preemptions {
			fmt.Fprintf(&b, "  ! %s (job %q) on node %s (%s)%s\n", p.Name, p.JobID, shortID(p.NodeID, verbose), p.NodeName, gpuSuffix(p.GPUs))
		}
	}
	b.WriteString("\nScheduler dry-run:\n")
	if len(resp.FailedTGAllocs) == 0 {
		b.WriteString("- All tasks successfully allocated.\n")
	}
	for _, line := range placementFailures(resp.FailedTGAllocs) {
		if strings.HasPrefix(line, " ") {
			b.WriteString("  " + line + "\n")
		} else {
			b.WriteString("- " + line + "\n")
		}
	}
	fmt.Fprintf(&b, "\nJob Modify Index: %d\n", resp.JobModifyIndex)
	return strings.TrimRight(b.String(), "\n")
}

// planGroups returns, sorted, the groups the plan changes.
func planGroups(resp *structs.JobPlanResponse) []string {
	seen := map[string]bool{}
	if resp.Annotations != nil {
		for g, u := range resp.Annotations.DesiredTGUpdates {
			if u != nil {
				seen[g] = true
			}
		}
	}
	for g := range resp.FailedTGAllocs {
		seen[g] = true
	}
	for _, list := range [][]*structs.PlannedAlloc{resp.Placements, resp.Stops} {
		for _, p := range list {
			if p != nil {
				seen[p.TaskGroup] = true
			}
		}
	}
	return sortedKeys(seen)
}

// formatPlanGroup renders one group's changes: its counts (and how many
// allocations could not be placed), then each placement (with the GPUs it
// would hold) and each stop, by name.
func formatPlanGroup(group string, resp *structs.JobPlanResponse, verbose bool) string {
	var u structs.DesiredUpdates
	if resp.Annotations != nil && resp.Annotations.DesiredTGUpdates[group] != nil {
		u = *resp.Annotations.DesiredTGUpdates[group]
	}
	counts := []string{fmt.Sprintf("%d place", u.Place), fmt.Sprintf("%d stop", u.Stop)}
	if u.InPlaceUpdate > 0 {
		counts = append(counts, fmt.Sprintf("%d in-place update", u.InPlaceUpdate))
	}
	if u.DestructiveUpdate > 0 {
		counts = append(counts, fmt.Sprintf("%d destructive update", u.DestructiveUpdate))
	}
	if u.Canary > 0 {
		counts = append(counts, fmt.Sprintf("%d canary", u.Canary))
	}
	if m, failed := resp.FailedTGAllocs[group]; failed {
		n := 1
		if m != nil {
			n += m.CoalescedFailures
		}
		counts = append(counts, fmt.Sprintf("%d not placed", n))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Task Group: %q (%s)\n", group, strings.Join(counts, ", "))
	for _, p := range byName(resp.Placements, group) {
		fmt.Fprintf(&b, "  + %s on node %s (%s)%s\n", p.Name, shortID(p.NodeID, verbose), p.NodeName, gpuSuffix(p.GPUs))
	}
	for _, p := range byName(resp.Stops, group) {
		fmt.Fprintf(&b, "  - %s on node %s: %s\n", p.Name, shortID(p.NodeID, verbose), p.Reason)
	}
	return b.String()
}

// byName returns the group's planned allocations sorted by name.
func byName(list []*structs.PlannedAlloc, group string) []*structs.PlannedAlloc {
	var out []*structs.PlannedAlloc
	for _, p := range list {
		if p != nil && p.TaskGroup == group {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func gpuSuffix(gpus []string) string {
	if len(gpus) == 0 {
		return ""
	}
	return ", GPUs " + strings.Join(gpus, ",")
}
