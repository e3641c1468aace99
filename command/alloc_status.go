package command

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/structs"
)

// AllocStatusCommand is `drover alloc status ID`.
type AllocStatusCommand struct{ Meta }

func (c *AllocStatusCommand) Synopsis() string { return "Show an allocation, its tasks and GPUs" }

func (c *AllocStatusCommand) Help() string {
	return helpText(`
Usage: drover alloc status [options] <alloc>

  Shows the allocation with ID <alloc> (or a unique prefix of one): where
  it runs, its status, the GPUs it holds, each task's state with its recent
  events and exit code, and how the scheduler placed it.`, `
Status Options:

  -json
    Print the allocation as JSON.

  -verbose
    Print full IDs, every event and every node score.`)
}

func (c *AllocStatusCommand) Run(args []string) int {
	var verbose bool
	fs := c.flagSet("alloc status")
	out := addOutputFlags(fs)
	fs.BoolVar(&verbose, "verbose", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return 1
	}
	if len(args) != 1 {
		return c.usageError("alloc status", "one argument: <alloc>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return 1
	}
	ctx, stop := c.context()
	defer stop()
	alloc, _, err := client.Allocations().Info(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading allocation %q: %s", args[0], err))
		return 1
	}
	if out.set() {
		return c.outputFormatted(out, alloc)
	}
	c.Ui.Output(formatAlloc(c.now(), alloc, verbose))
	return 0
}

// recentEvents is how many task events alloc status shows without -verbose.
const recentEvents = 10

// topScores is how many node scores alloc status shows without -verbose.
const topScores = 5

// formatAlloc renders one allocation.
func formatAlloc(now time.Time, a *structs.Allocation, verbose bool) string {
	version := "<unknown>"
	if a.Job != nil {
		version = strconv.FormatUint(a.Job.Version, 10)
	}
	sections := []string{formatKV([]kv{
		{"ID", a.ID},
		{"Eval ID", shortID(a.EvalID, verbose)},
		{"Name", a.Name},
		{"Node ID", shortID(a.NodeID, verbose)},
		{"Node Name", a.NodeName},
		{"Job ID", a.JobID},
		{"Job Version", version},
		{"Client Status", a.ClientStatus},
		{"Client Description", orNone(a.ClientDescription)},
		{"Desired Status", a.DesiredStatus},
		{"Desired Description", orNone(a.DesiredDescription)},
		{"Created", formatAgo(now, a.CreateTime)},
		{"Modified", formatAgo(now, a.ModifyTime)},
		{"GPUs", gpuList(a.DeviceIDs(), true)},
	})}
	if ports := formatPorts(a); ports != "" {
		sections = append(sections, ports) // alloc_ports.go
	}
	for _, task := range taskNames(a) {
		sections = append(sections, formatTask(a, task, verbose))
	}
	if a.Metrics != nil {
		sections = append(sections, "Placement Metrics\n"+formatMetrics(a.Metrics, verbose))
	}
	return strings.Join(sections, "\n\n")
}

// taskNames returns the tasks of the allocation's group, from its job or,
// without one, from its task states and resources.
func taskNames(a *structs.Allocation) []string {
	var names []string
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			for _, t := range tg.Tasks {
				names = append(names, t.Name)
			}
			return names
		}
	}
	seen := map[string]bool{}
	for name := range a.TaskStates {
		seen[name] = true
	}
	if a.AllocatedResources != nil {
		for name := range a.AllocatedResources.Tasks {
			seen[name] = true
		}
	}
	return sortedKeys(seen)
}

// formatTask renders one task: state, exit code, resources and events.
func formatTask(a *structs.Allocation, task string, verbose bool) string {
	ts := a.TaskStates[task]
	state := structs.TaskStatePending
	if ts != nil && ts.State != "" {
		state = ts.State
	}
	header := fmt.Sprintf("Task %q is %q", task, state)
	var details []kv
	if ts != nil {
		if ts.Failed {
			details = append(details, kv{"Failed", "true"})
		}
		details = append(details, kv{"Restarts", strconv.FormatUint(ts.Restarts, 10)})
		details = append(details, kv{"Started At", formatClock(ts.StartedAt)}, kv{"Finished At", formatClock(ts.FinishedAt)})
		if ts.LastCheckpoint != 0 {
			details = append(details, kv{"Last Checkpoint", formatTime(ts.LastCheckpoint)})
		}
		if code, ok := exitCode(ts); ok {
			details = append(details, kv{"Exit Code", strconv.Itoa(code)})
		}
	}
	out := []string{header}
	if len(details) > 0 {
		out = append(out, formatKV(details))
	}
	if a.AllocatedResources != nil {
		if r := a.AllocatedResources.Tasks[task]; r != nil {
			out = append(out, "Task Resources\n"+formatTaskResources(r))
		}
	}
	if ts != nil && len(ts.Events) > 0 {
		out = append(out, "Recent Events:\n"+formatEvents(ts.Events, verbose))
	}
	return strings.Join(out, "\n\n")
}

// exitCode returns the exit code of the task's last Terminated event.
func exitCode(ts *structs.TaskState) (int, bool) {
	for i := len(ts.Events) - 1; i >= 0; i-- {
		if ts.Events[i].Type == structs.TaskTerminated {
			return ts.Events[i].ExitCode, true
		}
	}
	return 0, false
}

// formatTaskResources renders what a task holds.
func formatTaskResources(r *structs.AllocatedTaskResources) string {
	var gpus []string
	for _, d := range r.Devices {
		gpus = append(gpus, d.DeviceIDs...)
	}
	slices.Sort(gpus)
	return formatTable([]string{"CPU", "Memory", "GPUs"}, [][]string{{
		fmt.Sprintf("%d MHz", r.Cpu.CpuShares),
		structs.FormatBytes(uint64(r.Memory.MemoryMB) << 20),
		gpuList(gpus, true),
	}})
}

// formatEvents renders task events newest first, the latest
// recentEvents unless verbose.
func formatEvents(events []*structs.TaskEvent, verbose bool) string {
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b *structs.TaskEvent) int { return cmp.Compare(b.Time, a.Time) })
	if !verbose && len(events) > recentEvents {
		events = events[:recentEvents]
	}
	rows := make([][]string, len(events))
	for i, e := range events {
		rows[i] = []string{formatTime(e.Time), e.Type, eventDescription(e)}
	}
	return formatTable([]string{"Time", "Type", "Description"}, rows)
}

// eventDescription is what an event says, with the exit code and signal
// of a Terminated event.
func eventDescription(e *structs.TaskEvent) string {
	desc := cmp.Or(e.DisplayMessage, e.Message)
	if e.Type != structs.TaskTerminated || strings.Contains(desc, "Exit Code") {
		return desc
	}
	parts := []string{fmt.Sprintf("Exit Code: %d", e.ExitCode)}
	if e.Signal != 0 {
		parts = append(parts, fmt.Sprintf("Signal: %d", e.Signal))
	}
	if desc != "" {
		parts = append(parts, desc)
	}
	return strings.Join(parts, ", ")
}

// formatMetrics summarizes how the scheduler placed the allocation: node
// counts, reasons nodes were passed over, and the best scores.
func formatMetrics(m *structs.AllocMetric, verbose bool) string {
	out := []string{formatKV([]kv{
		{"Nodes Evaluated", strconv.Itoa(m.NodesEvaluated)},
		{"Nodes Filtered", strconv.Itoa(m.NodesFiltered)},
		{"Nodes Exhausted", strconv.Itoa(m.NodesExhausted)},
		{"Allocation Time", m.AllocationTime.String()},
	})}
	if m.NodesFiltered+m.NodesExhausted > 0 {
		var lines []string
		for _, r := range metricReasons(m) {
			lines = append(lines, "  * "+r)
		}
		out = append(out, strings.Join(lines, "\n"))
	}
	if len(m.ScoreMetaData) > 0 {
		out = append(out, formatScores(m.ScoreMetaData, verbose))
	}
	return strings.Join(out, "\n\n")
}

// formatScores renders node scores, best first: one column per scorer and
// the final normalized score.
func formatScores(scores []*structs.NodeScoreMeta, verbose bool) string {
	scores = slices.Clone(scores)
	slices.SortStableFunc(scores, func(a, b *structs.NodeScoreMeta) int { return cmp.Compare(b.NormScore, a.NormScore) })
	if !verbose && len(scores) > topScores {
		scores = scores[:topScores]
	}
	names := map[string]bool{}
	for _, s := range scores {
		for k := range s.Scores {
			names[k] = true
		}
	}
	scorers := sortedKeys(names)
	headers := append(append([]string{"Node"}, scorers...), "Final Score")
	rows := make([][]string, len(scores))
	for i, s := range scores {
		row := []string{shortID(s.NodeID, verbose)}
		for _, k := range scorers {
			row = append(row, formatScore(s.Scores[k]))
		}
		rows[i] = append(row, formatScore(s.NormScore))
	}
	return formatTable(headers, rows)
}

// formatScore renders a score with three significant digits ("-0" as 0).
func formatScore(v float64) string {
	if v == 0 {
		v = 0
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
