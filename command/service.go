package command

import (
	"fmt"
	"strconv"
	"strings"
)

// ServiceListCommand is `drover service list`.
type ServiceListCommand struct{ Meta }

func (c *ServiceListCommand) Synopsis() string { return "List services in the service registry" }

func (c *ServiceListCommand) Help() string {
	return helpText(`
Usage: drover service list [options]

  Lists the services registered by running allocations (service blocks
  with provider = "nomad", or no provider) in the namespace, with their
  tags. -namespace=* lists every namespace you may read.`, `
List Options:

  -json
    Print the services as JSON.`)
}

func (c *ServiceListCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("service list")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("service list", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	list, _, err := client.Services().List(ctx, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing services: %s", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(list)
	}
	var rows [][]string
	for _, ns := range list {
		for _, s := range ns.Services {
			rows = append(rows, []string{s.ServiceName, ns.Namespace, "[" + strings.Join(s.Tags, ",") + "]"})
		}
	}
	if len(rows) == 0 {
		c.Ui.Output("No services found")
		return 0
	}
	c.Ui.Output(formatTable([]string{"Service Name", "Namespace", "Tags"}, rows))
	return 0
}

// ServiceInfoCommand is `drover service info NAME`.
type ServiceInfoCommand struct{ Meta }

func (c *ServiceInfoCommand) Synopsis() string { return "Show the registrations of a service" }

func (c *ServiceInfoCommand) Help() string {
	return helpText(`
Usage: drover service info [options] <service>

  Shows each registration of the service: its ID, job, allocation, node,
  address and port and tags.`, `
Info Options:

  -json
    Print the registrations as JSON.`)
}

func (c *ServiceInfoCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("service info")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("service info", "one argument: <service>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	regs, _, err := client.Services().Get(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading service %q: %s", args[0], err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(regs)
	}
	if len(regs) == 0 {
		c.Ui.Error(fmt.Sprintf("No service registrations found for %q", args[0]))
		return exitError
	}
	rows := make([][]string, 0, len(regs))
	for _, r := range regs {
		rows = append(rows, []string{r.ID, r.JobID, shortID(r.AllocID, false), shortID(r.NodeID, false),
			r.Address + ":" + strconv.Itoa(r.Port), "[" + strings.Join(r.Tags, ",") + "]"})
	}
	c.Ui.Output(formatTable([]string{"ID", "Job ID", "Alloc ID", "Node ID", "Address", "Tags"}, rows))
	return 0
}

// ServiceDeleteCommand is `drover service delete NAME ID`.
type ServiceDeleteCommand struct{ Meta }

func (c *ServiceDeleteCommand) Synopsis() string { return "Delete a service registration" }

func (c *ServiceDeleteCommand) Help() string {
	return helpText(`
Usage: drover service delete [options] <service> <id>

  Deletes one registration of the service (see drover service info for
  the IDs), for a stale entry. The allocation's client registers it
  again only when the client restarts; stop the job to remove a
  running service.`, "")
}

func (c *ServiceDeleteCommand) Run(args []string) int {
	fs := c.flagSet("service delete")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 2 {
		return c.usageError("service delete", "two arguments: <service> <id>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	if _, err := client.Services().Delete(ctx, args[0], args[1], nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error deleting service registration %q: %s", args[1], err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully deleted service registration %q!", args[1]))
	return 0
}
