package command

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// DeploymentListCommand is `drover deployment list [-json]`.
type DeploymentListCommand struct{ Meta }

func (c *DeploymentListCommand) Synopsis() string { return "List deployments" }

func (c *DeploymentListCommand) Help() string {
	return helpText(`
Usage: drover deployment list [options]

  Lists the deployments of the namespace, newest first.`, `
List Options:

  -json
    Print the deployments as JSON.

  -verbose
    Print full IDs.`)
}

func (c *DeploymentListCommand) Run(args []string) int {
	var asJSON, verbose bool
	fs := c.flagSet("deployment list")
	fs.BoolVar(&asJSON, "json", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("deployment list", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	all, _, err := client.Deployments().List(ctx, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing deployments: %s", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(all)
	}
	if len(all) == 0 {
		c.Ui.Output("No deployments found")
		return exitPlaced
	}
	rows := make([][]string, 0, len(all))
	for _, d := range all {
		rows = append(rows, []string{shortID(d.ID, verbose), d.JobID, strconv.FormatUint(d.JobVersion, 10), d.Status, d.StatusDescription})
	}
	c.Ui.Output(formatTable([]string{"ID", "Job ID", "Job Version", "Status", "Description"}, rows))
	return exitPlaced
}

// DeploymentStatusCommand is `drover deployment status [-json] <id>`.
type DeploymentStatusCommand struct{ Meta }

func (c *DeploymentStatusCommand) Synopsis() string { return "Display the status of a deployment" }

func (c *DeploymentStatusCommand) Help() string {
	return helpText(`
Usage: drover deployment status [options] <deployment>

  Shows a deployment (by ID or unique prefix): its status and, per
  group, the allocations desired, canaries, placed, healthy and
  unhealthy.`, `
Status Options:

  -json
    Print the deployment as JSON.

  -verbose
    Print full IDs.`)
}

func (c *DeploymentStatusCommand) Run(args []string) int {
	var asJSON, verbose bool
	fs := c.flagSet("deployment status")
	fs.BoolVar(&asJSON, "json", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("deployment status", "one argument: <deployment>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	d, _, err := client.Deployments().Info(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading deployment %q: %s", args[0], err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(d)
	}
	c.Ui.Output(formatDeployment(d, verbose))
	return exitPlaced
}

// deploymentWriteCommand is promote, fail, pause and resume: one
// argument, a write, then the evaluation it made followed unless -detach.
type deploymentWriteCommand struct {
	Meta
	name, synopsis, help string
	groups               bool // -group flags (promote)
	call                 func(ctx context.Context, d *api.Deployments, id string, groups []string) (*structs.DeploymentUpdateResponse, error)
	done                 string
}

func (c *deploymentWriteCommand) Synopsis() string { return c.synopsis }

func (c *deploymentWriteCommand) Help() string {
	opts := `
Options:

  -detach
    Return after the change, without following its evaluation.

  -verbose
    Print full IDs.`
	if c.groups {
		opts += `

  -group <name>
    Promote only this group's canaries (repeatable); all groups without it.`
	}
	return helpText("\nUsage: drover deployment "+c.name+" [options] <deployment>\n\n  "+c.help, opts)
}

// groupList is a repeatable -group flag.
type groupList []string

func (g *groupList) String() string     { return strings.Join(*g, ",") }
func (g *groupList) Set(v string) error { *g = append(*g, v); return nil }

func (c *deploymentWriteCommand) Run(args []string) int {
	var detach, verbose bool
	var groups groupList
	fs := c.flagSet("deployment " + c.name)
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if c.groups {
		fs.Var(&groups, "group", "")
	}
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("deployment "+c.name, "one argument: <deployment>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	d, _, err := client.Deployments().Info(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading deployment %q: %s", args[0], err))
		return exitError
	}
	resp, err := c.call(ctx, client.Deployments(), d.ID, groups)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error: deployment %s: %s", shortID(d.ID, verbose), err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Deployment %q %s", shortID(d.ID, verbose), c.done))
	if resp.RevertedJobVersion != nil {
		c.Ui.Output(fmt.Sprintf("Job %q reverted to version %d", d.JobID, *resp.RevertedJobVersion))
	}
	if detach || resp.EvalID == "" {
		return exitPlaced
	}
	mon := &evalMonitor{ui: c.Ui, client: client, namespace: d.Namespace, verbose: verbose}
	return mon.monitor(ctx, resp.EvalID)
}

// deploymentCommands are the `drover deployment` commands.
func deploymentCommands(m Meta) map[string]func() *deploymentWriteCommand {
	return map[string]func() *deploymentWriteCommand{
		"promote": func() *deploymentWriteCommand {
			return &deploymentWriteCommand{Meta: m, name: "promote", synopsis: "Promote a deployment's canaries", groups: true,
				help: "Promotes the deployment's canaries, all groups' or those given with -group: the old\n  allocations are then replaced.", done: "promoted",
				call: func(ctx context.Context, d *api.Deployments, id string, g []string) (*structs.DeploymentUpdateResponse, error) {
					return d.Promote(ctx, id, g, nil)
				}}
		},
		"fail": func() *deploymentWriteCommand {
			return &deploymentWriteCommand{Meta: m, name: "fail", synopsis: "Manually fail a deployment",
				help: "Fails the deployment; a group with auto_revert rolls the job back to its latest\n  stable version.", done: "failed",
				call: func(ctx context.Context, d *api.Deployments, id string, _ []string) (*structs.DeploymentUpdateResponse, error) {
					return d.Fail(ctx, id, nil)
				}}
		},
		"pause": func() *deploymentWriteCommand {
			return &deploymentWriteCommand{Meta: m, name: "pause", synopsis: "Pause a deployment",
				help: "Pauses the deployment: no more allocations are replaced until it is resumed.", done: "paused",
				call: func(ctx context.Context, d *api.Deployments, id string, _ []string) (*structs.DeploymentUpdateResponse, error) {
					return d.Pause(ctx, id, true, nil)
				}}
		},
		"resume": func() *deploymentWriteCommand {
			return &deploymentWriteCommand{Meta: m, name: "resume", synopsis: "Resume a paused deployment",
				help: "Resumes a paused deployment.", done: "resumed",
				call: func(ctx context.Context, d *api.Deployments, id string, _ []string) (*structs.DeploymentUpdateResponse, error) {
					return d.Pause(ctx, id, false, nil)
				}}
		},
	}
}
