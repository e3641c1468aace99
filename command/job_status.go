package command

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// JobStatusCommand is `drover job status [ID]`.
type JobStatusCommand struct{ Meta }

func (c *JobStatusCommand) Synopsis() string { return "List jobs or show one job's status" }

func (c *JobStatusCommand) Help() string {
	return helpText(`
Usage: drover job status [options] [<job>]

  Without an argument, lists the jobs. With a job ID (or a unique prefix of
  one), shows the job, its allocation counts per group, its latest
  evaluation, why allocations are not placed when they are waiting (for
  GPUs, say), and its allocations with the GPUs they hold.`, `
Status Options:

  -all-allocs
    Also list allocations of earlier instances of the job (a job of the
    same ID, since purged).

`+outputOptionsHelp+`

  -verbose
    Print full IDs.`)
}

// jobStatus is what `job status <id> -json` prints.
type jobStatus struct {
	Job         *structs.Job
	Summary     *structs.JobSummary
	Evaluations []*structs.Evaluation
	Allocations []*structs.AllocListStub
	// Children are a periodic or parameterized job's (job_status_periodic.go).
	Children []*structs.JobListStub `json:",omitempty"`
	// LatestDeployment is the job's newest deployment (nil: none, or an
	// agent without deployments).
	LatestDeployment *structs.Deployment `json:",omitempty"`
}

func (c *JobStatusCommand) Run(args []string) int {
	var verbose, allAllocs bool
	fs := c.flagSet("job status")
	fs.BoolVar(&allAllocs, "all-allocs", false, "")
	out := addOutputFlags(fs)
	fs.BoolVar(&verbose, "verbose", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return 1
	}
	if len(args) > 1 {
		return c.usageError("job status", "at most one argument: [<job>]")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return 1
	}
	ctx, stop := c.context()
	defer stop()
	if len(args) == 0 {
		jobs, _, err := client.Jobs().List(ctx, nil)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error listing jobs: %s", err))
			return 1
		}
		if out.set() {
			return c.outputFormatted(out, jobs)
		}
		if len(jobs) == 0 {
			c.Ui.Output("No running jobs")
			return 0
		}
		c.Ui.Output(formatJobList(jobs))
		return 0
	}
	stub, ok := resolveJob(ctx, c.Ui, client, args[0])
	if !ok {
		return 1
	}
	st, err := readJobStatus(ctx, client, stub)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading job %q: %s", stub.ID, err))
		return 1
	}
	if !allAllocs {
		st.Allocations = currentInstance(st.Allocations, st.Job.CreateIndex)
	}
	if out.set() {
		return c.outputFormatted(out, st)
	}
	c.Ui.Output(formatJobStatus(c.now(), st, verbose))
	return 0
}

// readJobStatus reads the job, its summary, evaluations and allocations.
func readJobStatus(ctx context.Context, client *api.Client, stub *structs.JobListStub) (*jobStatus, error) {
	jobs := client.Jobs()
	q := &api.QueryOptions{Namespace: stub.Namespace}
	var st jobStatus
	var err error
	if st.Job, _, err = jobs.Info(ctx, stub.ID, q); err != nil {
		return nil, err
	}
	if st.Summary, _, err = jobs.Summary(ctx, stub.ID, q); err != nil {
		return nil, err
	}
	if st.Evaluations, _, err = jobs.Evaluations(ctx, stub.ID, q); err != nil {
		return nil, err
	}
	if st.Allocations, _, err = jobs.Allocations(ctx, stub.ID, q); err != nil {
		return nil, err
	}
	if st.Children, err = readChildren(ctx, client, st.Job); err != nil {
		return nil, err
	}
	st.LatestDeployment, _, _ = jobs.LatestDeployment(ctx, stub.ID, q) // optional: deployment_monitor.go
	return &st, nil
}

// formatJobList renders the job list table.
func formatJobList(jobs []*structs.JobListStub) string {
	rows := make([][]string, len(jobs))
	for i, j := range jobs {
		status := j.Status
		if j.Stop {
			status += " (stopped)"
		}
		rows[i] = []string{j.ID, j.Type, strconv.Itoa(j.Priority), status, formatTime(j.SubmitTime)}
	}
	return formatTable([]string{"ID", "Type", "Priority", "Status", "Submit Date"}, rows)
}

// formatJobStatus renders one job: details, summary, latest evaluation,
// placement failures and allocations.
func formatJobStatus(now time.Time, st *jobStatus, verbose bool) string {
	j := st.Job
	status := j.Status
	if j.Stop {
		status += " (stopped)"
	}
	sections := []string{formatKV(append([]kv{
		{"ID", j.ID},
		{"Name", j.Name},
		{"Namespace", j.Namespace},
		{"Type", j.Type},
		{"Priority", strconv.Itoa(j.Priority)},
		{"Datacenters", strings.Join(j.Datacenters, ",")},
		{"Status", status},
		{"Version", strconv.FormatUint(j.Version, 10)},
		{"Submit Date", formatTime(j.SubmitTime)},
	}, parentKV(now, j)...))}
	sections = append(sections, formatJobUI(j.UI)...) // job_status_ui.go
	sections = append(sections, parentSections(j, st.Children)...)
	if st.Summary != nil && len(st.Summary.Summary) > 0 {
		sections = append(sections, "Summary\n"+formatSummary(st.Summary))
	}
	evals := latestFirst(st.Evaluations)
	if len(evals) > 0 {
		e := evals[0]
		sections = append(sections, "Latest Evaluation\n"+formatTable(
			[]string{"ID", "Status", "Triggered By", "Created"},
			[][]string{{shortID(e.ID, verbose), e.Status, e.TriggeredBy, formatAgo(now, e.CreateTime)}}))
	}
	if failed, blocked := pendingPlacement(evals); len(failed) > 0 || blocked != nil {
		lines := placementFailures(failed)
		if blocked != nil {
			lines = append(lines, blockedNote(blocked.ID, failed, verbose)...)
			lines = append(lines, contentionNote(blocked, failed)...)
		}
		sections = append(sections, "Placement Failure\n"+strings.Join(lines, "\n"))
	}
	if d := st.LatestDeployment; d != nil {
		sections = append(sections, "Latest Deployment\n"+formatDeployment(d, verbose))
	}
	if len(st.Allocations) == 0 {
		sections = append(sections, "Allocations\nNo allocations placed")
	} else {
		sections = append(sections, "Allocations\n"+formatJobAllocs(now, st.Allocations, verbose))
	}
	sections = append(sections, formatCheckpoints(now, st.Allocations, verbose)...) // job_status_checkpoint.go
	return strings.Join(sections, "\n\n")
}

// formatSummary renders allocation counts per group.
func formatSummary(s *structs.JobSummary) string {
	var rows [][]string
	for _, g := range sortedKeys(s.Summary) {
		c := s.Summary[g]
		rows = append(rows, []string{g, strconv.Itoa(c.Queued), strconv.Itoa(c.Starting), strconv.Itoa(c.Running),
			strconv.Itoa(c.Failed), strconv.Itoa(c.Complete), strconv.Itoa(c.Lost)})
	}
	return formatTable([]string{"Task Group", "Queued", "Starting", "Running", "Failed", "Complete", "Lost"}, rows)
}

// latestFirst returns evals newest first.
func latestFirst(evals []*structs.Evaluation) []*structs.Evaluation {
	evals = slices.Clone(evals)
	slices.SortStableFunc(evals, func(a, b *structs.Evaluation) int {
		return cmp.Or(cmp.Compare(b.CreateIndex, a.CreateIndex), cmp.Compare(b.CreateTime, a.CreateTime))
	})
	return evals
}

// pendingPlacement returns why the job's allocations are not all placed:
// the failures of its newest blocked evaluation (and that evaluation), or,
// without one, those of the newest evaluation if it failed to place some.
// evals must be newest first.
func pendingPlacement(evals []*structs.Evaluation) (map[string]*structs.AllocMetric, *structs.Evaluation) {
	for _, e := range evals {
		if e.Status != structs.EvalStatusBlocked {
			continue
		}
		if len(e.FailedTGAllocs) > 0 {
			return e.FailedTGAllocs, e
		}
		// A blocked eval without reasons: use its creator's.
		for _, prev := range evals {
			if prev.BlockedEval == e.ID && len(prev.FailedTGAllocs) > 0 {
				return prev.FailedTGAllocs, e
			}
		}
		return map[string]*structs.AllocMetric{}, e
	}
	if len(evals) > 0 && len(evals[0].FailedTGAllocs) > 0 {
		return evals[0].FailedTGAllocs, nil
	}
	return nil, nil
}

// formatJobAllocs renders a job's allocations, newest first.
func formatJobAllocs(now time.Time, allocs []*structs.AllocListStub, verbose bool) string {
	allocs = slices.Clone(allocs)
	slices.SortStableFunc(allocs, func(a, b *structs.AllocListStub) int {
		return cmp.Or(cmp.Compare(b.CreateIndex, a.CreateIndex), strings.Compare(a.Name, b.Name))
	})
	rows := make([][]string, len(allocs))
	for i, a := range allocs {
		rows[i] = []string{shortID(a.ID, verbose), shortID(a.NodeID, verbose), a.TaskGroup, a.DesiredStatus,
			a.ClientStatus, formatAgo(now, a.CreateTime), gpuList(allocatedGPUs(a.AllocatedResources), verbose)}
	}
	return formatTable([]string{"ID", "Node ID", "Task Group", "Desired", "Status", "Created", "GPUs"}, rows)
}
