package command

import (
	"fmt"
	"strings"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// JobDispatchCommand is `drover job dispatch [options] <job> [input]`.
type JobDispatchCommand struct{ Meta }

func (c *JobDispatchCommand) Synopsis() string { return "Dispatch an instance of a parameterized job" }

func (c *JobDispatchCommand) Help() string {
	return helpText(`
Usage: drover job dispatch [options] <job> [input file | -]

  Creates a child of the parameterized job <job> with a payload read from
  the input file ("-" reads stdin; at most 16 KiB) and meta, and follows
  its evaluation as job run does. The payload is written to the file the
  task's dispatch_payload block names, in its local/ directory; meta
  reaches the task as NOMAD_META_<key> and DROVER_META_<key>.`, `
Dispatch Options:

  -meta <key>=<value>
    Meta for the child; repeatable. Keys must be listed in the job's
    meta_required or meta_optional.

  -id-prefix-template <prefix>
    Put <prefix> in the child's ID: <job>/dispatch-<prefix>-<unix>-<hex>.

  -detach
    Return after dispatching, printing the evaluation ID.

  -verbose
    Print full IDs.`)
}

// metaFlags collects repeated -meta k=v.
type metaFlags map[string]string

func (m metaFlags) String() string { return "" }

func (m metaFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("meta %q is not key=value", v)
	}
	m[k] = val
	return nil
}

func (c *JobDispatchCommand) Run(args []string) int {
	var detach, verbose bool
	var prefix string
	meta := metaFlags{}
	fs := c.flagSet("job dispatch")
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.StringVar(&prefix, "id-prefix-template", "", "")
	fs.Var(meta, "meta", "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) < 1 || len(args) > 2 {
		return c.usageError("job dispatch", "<job> and an optional input file")
	}
	var payload []byte
	if len(args) == 2 {
		var err error
		if payload, err = c.readArg(args[1], structs.DispatchPayloadSizeLimit>>10); err != nil {
			c.Ui.Error(fmt.Sprintf("Error reading input: %s", err))
			return exitError
		}
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	job, ok := resolveJob(ctx, c.Ui, client, args[0])
	if !ok {
		return exitError
	}
	opts := &api.DispatchOptions{JobID: job.ID, Payload: payload, Meta: meta, IdPrefixTemplate: prefix}
	resp, _, err := client.Jobs().Dispatch(ctx, opts, &api.WriteOptions{Namespace: job.Namespace})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error dispatching job %q: %s", job.ID, err))
		return exitError
	}
	c.Ui.Output("Dispatched Job ID = " + resp.DispatchedJobID)
	if resp.EvalID == "" {
		return exitPlaced
	}
	c.Ui.Output("Evaluation ID      = " + shortID(resp.EvalID, verbose))
	if detach {
		return exitPlaced
	}
	c.Ui.Output(fmt.Sprintf("==> Evaluation %q created for job %q", shortID(resp.EvalID, verbose), resp.DispatchedJobID))
	mon := &evalMonitor{ui: c.Ui, client: client, namespace: job.Namespace, verbose: verbose}
	return mon.monitor(ctx, resp.EvalID)
}
