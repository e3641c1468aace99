package command

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// EvalListCommand is `drover eval list`.
type EvalListCommand struct{ Meta }

func (c *EvalListCommand) Synopsis() string { return "List evaluations" }

func (c *EvalListCommand) Help() string {
	return helpText(`
Usage: drover eval list [options]

  Lists evaluations, newest first.`, `
List Options:

  -job <id>
    Only the evaluations of this job.

  -status <status>
    Only evaluations with this status (pending, blocked, complete, failed,
    canceled).

`+outputOptionsHelp+`

  -verbose
    Print full IDs.`)
}

func (c *EvalListCommand) Run(args []string) int {
	var job, status string
	var verbose bool
	fs := c.flagSet("eval list")
	fs.StringVar(&job, "job", "", "")
	fs.StringVar(&status, "status", "", "")
	fs.BoolVar(&verbose, "verbose", false, "")
	out := addOutputFlags(fs)
	args, ok := c.parse(fs, args)
	if !ok {
		return 1
	}
	if len(args) != 0 {
		return c.usageError("eval list", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return 1
	}
	ctx, stop := c.context()
	defer stop()
	var evals []*structs.Evaluation
	var err error
	if job != "" {
		evals, _, err = client.Jobs().Evaluations(ctx, job, nil)
	} else {
		evals, _, err = client.Evaluations().List(ctx, nil)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing evaluations: %s", err))
		return 1
	}
	evals = slices.DeleteFunc(latestFirst(evals), func(e *structs.Evaluation) bool { return status != "" && e.Status != status })
	if out.set() {
		return c.outputFormatted(out, evals)
	}
	if len(evals) == 0 {
		c.Ui.Output("No evals found")
		return 0
	}
	c.Ui.Output(formatEvalList(c.now(), evals, verbose))
	return 0
}

// formatEvalList renders the evaluation table, Nomad's columns.
func formatEvalList(now time.Time, evals []*structs.Evaluation, verbose bool) string {
	rows := make([][]string, len(evals))
	for i, e := range evals {
		placement := strconv.FormatBool(len(e.FailedTGAllocs) > 0)
		rows[i] = []string{shortID(e.ID, verbose), strconv.Itoa(e.Priority), e.TriggeredBy, e.JobID, e.Namespace,
			orNone(shortID(e.NodeID, verbose)), e.Status, placement, formatAgo(now, e.CreateTime)}
	}
	return formatTable([]string{"ID", "Priority", "Triggered By", "Job ID", "Namespace", "Node ID", "Status", "Placement Failures", "Created"}, rows)
}

// EvalStatusCommand is `drover eval status <id>`.
type EvalStatusCommand struct{ Meta }

func (c *EvalStatusCommand) Synopsis() string { return "Show an evaluation and why placements failed" }

func (c *EvalStatusCommand) Help() string {
	return helpText(`
Usage: drover eval status [options] <eval>

  Shows an evaluation (by ID or a unique prefix of one): its status, what
  triggered it, and for each task group whose allocations could not be
  placed, how many nodes each reason filtered or exhausted.`, `
Status Options:

`+outputOptionsHelp+`

  -verbose
    Print full IDs.`)
}

func (c *EvalStatusCommand) Run(args []string) int {
	var verbose bool
	fs := c.flagSet("eval status")
	fs.BoolVar(&verbose, "verbose", false, "")
	out := addOutputFlags(fs)
	args, ok := c.parse(fs, args)
	if !ok {
		return 1
	}
	if len(args) != 1 {
		return c.usageError("eval status", "one argument: <eval>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return 1
	}
	ctx, stop := c.context()
	defer stop()
	matches, _, err := client.Evaluations().List(ctx, &api.QueryOptions{Prefix: args[0]})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing evaluations: %s", err))
		return 1
	}
	var ev *structs.Evaluation
	switch i := slices.IndexFunc(matches, func(e *structs.Evaluation) bool { return e.ID == args[0] }); {
	case i >= 0:
		ev = matches[i]
	case len(matches) == 1:
		ev = matches[0]
	case len(matches) == 0:
		c.Ui.Error(fmt.Sprintf("No evaluation(s) with prefix or ID %q found", args[0]))
		return 1
	default:
		c.Ui.Error(fmt.Sprintf("Prefix %q matched multiple evaluations:\n\n%s", args[0], formatEvalList(c.now(), matches, verbose)))
		return 1
	}
	if out.set() {
		return c.outputFormatted(out, ev)
	}
	c.Ui.Output(formatEvalStatus(c.now(), ev, verbose))
	return 0
}

// formatEvalStatus renders one evaluation with its placement failures.
func formatEvalStatus(now time.Time, e *structs.Evaluation, verbose bool) string {
	pairs := []kv{
		{"ID", shortID(e.ID, verbose)},
		{"Create Time", formatAgo(now, e.CreateTime)},
		{"Modify Time", formatAgo(now, e.ModifyTime)},
		{"Status", e.Status},
		{"Status Description", orNone(e.StatusDescription)},
		{"Type", e.Type},
		{"TriggeredBy", e.TriggeredBy},
		{"Job ID", e.JobID},
		{"Namespace", e.Namespace},
		{"Priority", strconv.Itoa(e.Priority)},
		{"Placement Failures", strconv.FormatBool(len(e.FailedTGAllocs) > 0)},
	}
	if e.NodeID != "" {
		pairs = append(pairs, kv{"Node ID", shortID(e.NodeID, verbose)})
	}
	for _, link := range []kv{{"Previous Eval", e.PreviousEval}, {"Next Eval", e.NextEval}, {"Blocked Eval", e.BlockedEval}} {
		if link.value != "" {
			pairs = append(pairs, kv{link.key, shortID(link.value, verbose)})
		}
	}
	sections := []string{formatKV(pairs)}
	if len(e.QueuedAllocations) > 0 {
		groups := sortedKeys(e.QueuedAllocations)
		rows := make([][]string, len(groups))
		for i, g := range groups {
			rows[i] = []string{g, strconv.Itoa(e.QueuedAllocations[g])}
		}
		sections = append(sections, "Queued Allocations\n"+formatTable([]string{"Task Group", "Queued"}, rows))
	}
	if len(e.FailedTGAllocs) > 0 {
		lines := placementFailures(e.FailedTGAllocs)
		if e.BlockedEval != "" {
			lines = append(lines, blockedNote(e.BlockedEval, e.FailedTGAllocs, verbose)...)
		}
		sections = append(sections, "Failed Placements\n"+strings.Join(lines, "\n"))
	}
	return strings.Join(sections, "\n\n")
}
