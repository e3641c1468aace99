package command

import (
	"flag"
	"fmt"
	"math"
	"strconv"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// QueueApplyCommand is `drover queue apply [-description] [-weight]
// [-guaranteed-gpus] [-max-gpus] NAME`.
type QueueApplyCommand struct{ Meta }

func (c *QueueApplyCommand) Synopsis() string { return "Create or update a fair-share queue" }

func (c *QueueApplyCommand) Help() string {
	return helpText(`
Usage: drover queue apply [options] <queue>

  Creates the queue, or updates it: options not given keep their current
  values (a new queue has weight 1, nothing guaranteed and no maximum).
  Jobs name their queue with queue = "..." in the job block; a job in a
  queue that does not exist is refused. When GPUs are contended, each
  active queue's share of them follows its weight.`, `
Apply Options:

  -description=<text>
    A description of the queue.

  -weight=<n>
    The queue's relative share of contended GPUs, 1 to 1000.

  -guaranteed-gpus=<n>
    GPUs the queue gets whenever it asks for them. Other queues may
    borrow them while it is idle; they are reclaimed when it asks.

  -max-gpus=<n>
    The most GPUs the queue's allocations may hold together; 0 is
    unlimited. At least -guaranteed-gpus.`)
}

func (c *QueueApplyCommand) Run(args []string) int {
	var description string
	var weight, guaranteed, maxGPUs int
	fs := c.flagSet("queue apply")
	fs.StringVar(&description, "description", "", "")
	fs.IntVar(&weight, "weight", 0, "")
	fs.IntVar(&guaranteed, "guaranteed-gpus", 0, "")
	fs.IntVar(&maxGPUs, "max-gpus", 0, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("queue apply", "one argument: <queue>")
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	q := &structs.Queue{Name: args[0], Weight: structs.QueueMinWeight}
	current, _, err := client.Queues().Info(ctx, args[0], nil)
	switch {
	case err == nil && current.Queue != nil:
		q = current.Queue
	case err != nil && !api.IsNotFound(err):
		c.Ui.Error(fmt.Sprintf("Error reading queue %q: %s", args[0], err))
		return exitError
	}
	if given["description"] {
		q.Description = description
	}
	if given["weight"] {
		q.Weight = weight
	}
	if given["guaranteed-gpus"] {
		q.GuaranteedGPUs = guaranteed
	}
	if given["max-gpus"] {
		q.MaxGPUs = maxGPUs
	}
	if err := q.Validate(); err != nil {
		c.Ui.Error(fmt.Sprintf("Invalid queue: %s", err))
		return exitError
	}
	if _, err := client.Queues().Register(ctx, q, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error applying queue %q: %s", q.Name, err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully applied queue %q!", q.Name))
	return 0
}

// QueueListCommand is `drover queue list`.
type QueueListCommand struct{ Meta }

func (c *QueueListCommand) Synopsis() string { return "List queues with their usage and fair share" }

func (c *QueueListCommand) Help() string {
	return helpText(`
Usage: drover queue list [options]

  Lists the queues: weight, guaranteed and maximum GPUs, the GPUs their
  allocations hold, how many of their jobs wait, and their fair share of
  the cluster's GPUs (the GPUs of ready, eligible nodes times the queue's
  weight over the weights of the queues that hold GPUs or have jobs
  waiting; "-" for an idle queue).`, `
List Options:

  -json
    Print the queues as JSON.`)
}

func (c *QueueListCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("queue list")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("queue list", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	qs, _, err := client.Queues().List(ctx, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing queues: %s", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(qs)
	}
	rows := make([][]string, 0, len(qs))
	cluster := 0
	for _, st := range qs {
		if st == nil || st.Queue == nil {
			continue
		}
		cluster = st.ClusterGPUs
		q := st.Queue
		rows = append(rows, []string{q.Name, strconv.Itoa(q.Weight), strconv.Itoa(q.GuaranteedGPUs), maxGPUsText(q.MaxGPUs),
			formatGPUCount(st.Usage.GPUs), strconv.Itoa(st.Usage.Waiting), fairShareText(st)})
	}
	c.Ui.Output(formatTable([]string{"Name", "Weight", "Guaranteed", "Max", "GPUs", "Waiting", "Fair Share"}, rows))
	c.Ui.Output(fmt.Sprintf("\nFair shares divide %s of ready, eligible nodes among the active queues.", plural(cluster, "GPU")))
	return 0
}

// QueueStatusCommand is `drover queue status NAME`.
type QueueStatusCommand struct{ Meta }

func (c *QueueStatusCommand) Synopsis() string { return "Show a queue, its usage and its fair share" }

func (c *QueueStatusCommand) Help() string {
	return helpText(`
Usage: drover queue status [options] <queue>

  Shows the queue's settings, the GPUs its allocations hold, how many of
  its jobs wait for GPUs, how many jobs name it, and its fair share of
  the cluster's GPUs.`, `
Status Options:

  -json
    Print the queue and its usage as JSON.`)
}

func (c *QueueStatusCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("queue status")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("queue status", "one argument: <queue>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	st, _, err := client.Queues().Info(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading queue %q: %s", args[0], err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(st)
	}
	if st.Queue == nil {
		c.Ui.Error(fmt.Sprintf("Error reading queue %q: the answer has no queue", args[0]))
		return exitError
	}
	q := st.Queue
	c.Ui.Output(formatKV([]kv{
		{"Name", q.Name},
		{"Description", orNone(q.Description)},
		{"Weight", strconv.Itoa(q.Weight)},
		{"Guaranteed GPUs", strconv.Itoa(q.GuaranteedGPUs)},
		{"Max GPUs", maxGPUsText(q.MaxGPUs)},
		{"GPUs Held", formatGPUCount(st.Usage.GPUs)},
		{"Waiting Jobs", strconv.Itoa(st.Usage.Waiting)},
		{"Jobs", strconv.Itoa(st.Jobs)},
		{"Fair Share", fairShareText(st) + " of " + plural(st.ClusterGPUs, "GPU")},
	}))
	return 0
}

// QueueDeleteCommand is `drover queue delete NAME`.
type QueueDeleteCommand struct{ Meta }

func (c *QueueDeleteCommand) Synopsis() string { return "Delete a queue" }

func (c *QueueDeleteCommand) Help() string {
	return helpText(`
Usage: drover queue delete [options] <queue>

  Deletes the queue. The default queue cannot be deleted, nor one that
  jobs still name (purge them first: drover job stop -purge).`, "")
}

func (c *QueueDeleteCommand) Run(args []string) int {
	fs := c.flagSet("queue delete")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("queue delete", "one argument: <queue>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	if _, err := client.Queues().Delete(ctx, args[0], nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error deleting queue %q: %s", args[0], err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully deleted queue %q!", args[0]))
	return 0
}

// maxGPUsText renders a queue's maximum: "unlimited" for 0.
func maxGPUsText(n int) string {
	if n == 0 {
		return "unlimited"
	}
	return strconv.Itoa(n)
}

// formatGPUCount renders a number of GPUs with at most two decimals: 2,
// 1.25.
func formatGPUCount(gpus float64) string {
	return strconv.FormatFloat(math.Round(gpus*100)/100, 'f', -1, 64)
}

// fairShareText is a queue's fair share in GPUs, or "-" while it is idle
// (it asks for nothing, so it has no share).
func fairShareText(st *structs.QueueStatus) string {
	if !st.Usage.Active() {
		return "-"
	}
	return formatGPUCount(st.FairShare)
}
