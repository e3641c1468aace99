package command

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// JobHistoryCommand is `drover job history [-p] [-version N] [-json] <job>`.
type JobHistoryCommand struct{ Meta }

func (c *JobHistoryCommand) Synopsis() string { return "Display all tracked versions of a job" }

func (c *JobHistoryCommand) Help() string {
	return helpText(`
Usage: drover job history [options] <job>

  Lists the versions of the job the servers keep (the last 6), newest
  first: each one's version, stability and submit time, and with -p the
  changes it made to the version before it.`, `
History Options:

  -p
    Show the changes of each version.

  -version <n>
    Show only version n.

  -json
    Print the versions as JSON.`)
}

func (c *JobHistoryCommand) Run(args []string) int {
	var diffs, asJSON bool
	var version string
	fs := c.flagSet("job history")
	fs.BoolVar(&diffs, "p", false, "")
	fs.BoolVar(&asJSON, "json", false, "")
	fs.StringVar(&version, "version", "", "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("job history", "one argument: <job>")
	}
	want := int64(-1)
	if version != "" {
		v, err := strconv.ParseUint(version, 10, 64)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error parsing -version %q: not a version number", version))
			return exitError
		}
		want = int64(v)
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	stub, ok := resolveJob(ctx, c.Ui, client, args[0])
	if !ok {
		return exitError
	}
	versions, jobDiffs, _, err := client.Jobs().Versions(ctx, stub.ID, diffs, &api.QueryOptions{Namespace: stub.Namespace})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading versions of job %q: %s", stub.ID, err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(versions)
	}
	var blocks []string
	for i, v := range versions {
		if want >= 0 && v.Version != uint64(want) {
			continue
		}
		var d *structs.JobDiff
		if diffs && i < len(jobDiffs) {
			d = jobDiffs[i]
		}
		blocks = append(blocks, formatVersion(v, d, diffs))
	}
	if len(blocks) == 0 {
		c.Ui.Error(fmt.Sprintf("Job %q has no version %s", stub.ID, version))
		return exitError
	}
	c.Ui.Output(strings.Join(blocks, "\n\n"))
	return exitPlaced
}

// formatVersion renders one version, with its diff when asked (the
// oldest version kept has none).
func formatVersion(v *structs.Job, d *structs.JobDiff, showDiff bool) string {
	out := formatKV([]kv{
		{"Version", strconv.FormatUint(v.Version, 10)},
		{"Stable", strconv.FormatBool(v.Stable)},
		{"Submit Date", formatTime(v.SubmitTime)},
	})
	if !showDiff || d == nil {
		return out
	}
	lines := diffLines(d.Fields)
	if len(lines) == 0 {
		lines = []string{"(no change)"}
	}
	return out + "\nDiff        =\n" + strings.Join(lines, "\n")
}

// JobRevertCommand is `drover job revert [-detach] <job> <version>`.
type JobRevertCommand struct{ Meta }

func (c *JobRevertCommand) Synopsis() string { return "Revert to a prior version of the job" }

func (c *JobRevertCommand) Help() string {
	return helpText(`
Usage: drover job revert [options] <job> <version>

  Registers version <version> of the job again, as its newest version,
  and follows the evaluation unless -detach is given.`, `
Revert Options:

  -detach
    Return after the job is registered, printing the evaluation ID.

  -verbose
    Print full IDs.`)
}

func (c *JobRevertCommand) Run(args []string) int {
	var detach, verbose bool
	fs := c.flagSet("job revert")
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 2 {
		return c.usageError("job revert", "two arguments: <job> <version>")
	}
	version, err := strconv.ParseUint(args[1], 10, 64)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error parsing version %q: not a version number", args[1]))
		return exitError
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	stub, ok := resolveJob(ctx, c.Ui, client, args[0])
	if !ok {
		return exitError
	}
	resp, _, err := client.Jobs().Revert(ctx, stub.ID, version, nil, &api.WriteOptions{Namespace: stub.Namespace})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reverting job %q: %s", stub.ID, err))
		return exitError
	}
	if detach || resp.EvalID == "" {
		c.Ui.Output(fmt.Sprintf("Job %q reverted to version %d", stub.ID, version))
		if resp.EvalID != "" {
			c.Ui.Output("Evaluation ID: " + resp.EvalID)
		}
		return exitPlaced
	}
	c.Ui.Output(fmt.Sprintf("==> Evaluation %q created to revert job %q to version %d", shortID(resp.EvalID, verbose), stub.ID, version))
	mon := &evalMonitor{ui: c.Ui, client: client, namespace: stub.Namespace, verbose: verbose}
	return mon.monitor(ctx, resp.EvalID)
}

// JobInspectCommand is `drover job inspect [-version N] [-json] <job>`.
type JobInspectCommand struct{ Meta }

func (c *JobInspectCommand) Synopsis() string { return "Inspect a submitted job" }

func (c *JobInspectCommand) Help() string {
	return helpText(`
Usage: drover job inspect [options] <job>

  Prints the job as the servers store it, as JSON (Nomad's API shape), or
  one of its stored versions with -version.`, `
Inspect Options:

  -version <n>
    Print version n of the job.

  -json
    Print JSON (the default, accepted for Nomad's CLI's sake).`)
}

func (c *JobInspectCommand) Run(args []string) int {
	var version string
	var asJSON bool
	fs := c.flagSet("job inspect")
	fs.StringVar(&version, "version", "", "")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("job inspect", "one argument: <job>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	stub, ok := resolveJob(ctx, c.Ui, client, args[0])
	if !ok {
		return exitError
	}
	q := &api.QueryOptions{Namespace: stub.Namespace}
	var job *structs.Job
	var err error
	if version != "" {
		v, perr := strconv.ParseUint(version, 10, 64)
		if perr != nil {
			c.Ui.Error(fmt.Sprintf("Error parsing -version %q: not a version number", version))
			return exitError
		}
		job, _, err = client.Jobs().InfoVersion(ctx, stub.ID, v, q)
	} else {
		job, _, err = client.Jobs().Info(ctx, stub.ID, q)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error inspecting job %q: %s", stub.ID, err))
		return exitError
	}
	return c.outputJSON(map[string]any{"Job": job})
}
