package command

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/droverhq/drover/api"
)

// ScalingPolicyListCommand is `drover scaling policy list [-job] [-type]`.
type ScalingPolicyListCommand struct{ Meta }

func (c *ScalingPolicyListCommand) Synopsis() string { return "List the groups' scaling policies" }

func (c *ScalingPolicyListCommand) Help() string {
	return helpText(`
Usage: drover scaling policy list [options]

  Lists the scaling policies: one per group with a scaling block, its ID
  derived from the namespace, job and group (the same for every version
  of the job). A stopped job's policies are disabled.`, `
List Options:

  -job=<id>
    Only the policies of this job.

  -type=<type>
    Only the policies of this type (horizontal).

  -json
    Print the policies as JSON.`)
}

func (c *ScalingPolicyListCommand) Run(args []string) int {
	var job, typ string
	var asJSON bool
	fs := c.flagSet("scaling policy list")
	fs.StringVar(&job, "job", "", "")
	fs.StringVar(&typ, "type", "", "")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("scaling policy list", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	q := &api.QueryOptions{Params: map[string]string{}}
	if job != "" {
		q.Params["job"] = job
	}
	if typ != "" {
		q.Params["type"] = typ
	}
	ps, _, err := client.Scaling().ListPolicies(ctx, q)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing scaling policies: %s", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(ps)
	}
	if len(ps) == 0 {
		c.Ui.Output("No policies found")
		return 0
	}
	rows := make([][]string, 0, len(ps))
	for _, p := range ps {
		rows = append(rows, []string{p.ID, strconv.FormatBool(p.Enabled), p.Type, formatTarget(p.Target)})
	}
	c.Ui.Output(formatTable([]string{"ID", "Enabled", "Type", "Target"}, rows))
	return 0
}

// ScalingPolicyInfoCommand is `drover scaling policy info <id>`.
type ScalingPolicyInfoCommand struct{ Meta }

func (c *ScalingPolicyInfoCommand) Synopsis() string { return "Show one scaling policy" }

func (c *ScalingPolicyInfoCommand) Help() string {
	return helpText(`
Usage: drover scaling policy info [options] <policy_id>

  Shows a scaling policy: its target, bounds and the policy given to an
  external autoscaler.`, `
Info Options:

  -json
    Print the policy as JSON.`)
}

func (c *ScalingPolicyInfoCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("scaling policy info")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("scaling policy info", "one argument: <policy_id>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	p, _, err := client.Scaling().GetPolicy(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading scaling policy %q: %s", args[0], err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(p)
	}
	bound := func(v *int64) string {
		if v == nil {
			return "-"
		}
		return strconv.FormatInt(*v, 10)
	}
	c.Ui.Output(formatKV([]kv{
		{"ID", p.ID},
		{"Enabled", strconv.FormatBool(p.Enabled == nil || *p.Enabled)},
		{"Type", p.Type},
		{"Target", formatTarget(p.Target)},
		{"Min", bound(p.Min)},
		{"Max", bound(p.Max)},
	}))
	if len(p.Policy) > 0 {
		c.Ui.Output("\nPolicy")
		return c.outputJSON(p.Policy)
	}
	return 0
}

// formatTarget renders a policy target as Nomad does: "Key:value,...",
// keys sorted.
func formatTarget(t map[string]string) string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += ","
		}
		out += k + ":" + printable(t[k])
	}
	return out
}
