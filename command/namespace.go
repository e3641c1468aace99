package command

import (
	"flag"
	"fmt"
	"os"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// NamespaceApplyCommand is `drover namespace apply [-description]
// [-quota] NAME`.
type NamespaceApplyCommand struct{ Meta }

func (c *NamespaceApplyCommand) Synopsis() string { return "Create or update a namespace" }

func (c *NamespaceApplyCommand) Help() string {
	return helpText(`
Usage: drover namespace apply [options] <namespace>

  Creates the namespace, or updates it: options not given keep their
  current values. Jobs name their namespace with namespace = "..." in the
  job file or -namespace; a job in a namespace that does not exist is
  refused.`, `
Apply Options:

  -description=<text>
    A description of the namespace.

  -quota=<quota>
    The quota (see drover quota apply) that caps what the namespace's
    allocations hold. -quota= (empty) removes it.`)
}

func (c *NamespaceApplyCommand) Run(args []string) int {
	var description, quota string
	fs := c.flagSet("namespace apply")
	fs.StringVar(&description, "description", "", "")
	fs.StringVar(&quota, "quota", "", "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("namespace apply", "one argument: <namespace>")
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	ns, _, err := client.Namespaces().Info(ctx, args[0], nil)
	switch {
	case api.IsNotFound(err):
		ns = &structs.Namespace{Name: args[0]}
	case err != nil:
		c.Ui.Error(fmt.Sprintf("Error reading namespace %q: %s", args[0], err))
		return exitError
	}
	if given["description"] {
		ns.Description = description
	}
	if given["quota"] {
		ns.Quota = quota
	}
	if err := ns.Validate(); err != nil {
		c.Ui.Error(fmt.Sprintf("Invalid namespace: %s", err))
		return exitError
	}
	if _, err := client.Namespaces().Register(ctx, ns, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error applying namespace %q: %s", ns.Name, err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully applied namespace %q!", ns.Name))
	return 0
}

// NamespaceListCommand is `drover namespace list`.
type NamespaceListCommand struct{ Meta }

func (c *NamespaceListCommand) Synopsis() string { return "List namespaces" }

func (c *NamespaceListCommand) Help() string {
	return helpText(`
Usage: drover namespace list [options]

  Lists the namespaces with their descriptions and quotas.`, `
List Options:

  -json
    Print the namespaces as JSON.`)
}

func (c *NamespaceListCommand) Run(args []string) int {
	fs := c.flagSet("namespace list")
	out := addOutputFlags(fs)
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("namespace list", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	nss, _, err := client.Namespaces().List(ctx, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing namespaces: %s", err))
		return exitError
	}
	if out.set() {
		return c.outputFormatted(out, nss)
	}
	rows := make([][]string, 0, len(nss))
	for _, ns := range nss {
		if ns == nil {
			continue
		}
		rows = append(rows, []string{ns.Name, orNone(ns.Description), orNone(ns.Quota)})
	}
	c.Ui.Output(formatTable([]string{"Name", "Description", "Quota"}, rows))
	return 0
}

// NamespaceStatusCommand is `drover namespace status NAME`.
type NamespaceStatusCommand struct{ Meta }

func (c *NamespaceStatusCommand) Synopsis() string { return "Show a namespace and its quota usage" }

func (c *NamespaceStatusCommand) Help() string {
	return helpText(`
Usage: drover namespace status [options] <namespace>

  Shows the namespace and, when it has a quota, what the quota's
  namespaces hold against its limits in this region.`, `
Status Options:

  -json
    Print the namespace as JSON.`)
}

func (c *NamespaceStatusCommand) Run(args []string) int {
	fs := c.flagSet("namespace status")
	out := addOutputFlags(fs)
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("namespace status", "one argument: <namespace>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	ns, _, err := client.Namespaces().Info(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading namespace %q: %s", args[0], err))
		return exitError
	}
	if out.set() {
		return c.outputFormatted(out, ns)
	}
	c.Ui.Output(formatKV([]kv{{"Name", ns.Name}, {"Description", orNone(ns.Description)}, {"Quota", orNone(ns.Quota)}}))
	if ns.Quota == "" {
		return 0
	}
	usage, _, err := client.Quotas().Usage(ctx, ns.Quota, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the usage of quota %q: %s", ns.Quota, err))
		return exitError
	}
	c.Ui.Output("\nQuota Limits")
	c.Ui.Output(formatQuotaUsage(usage))
	return 0
}

// NamespaceDeleteCommand is `drover namespace delete NAME`.
type NamespaceDeleteCommand struct{ Meta }

func (c *NamespaceDeleteCommand) Synopsis() string { return "Delete a namespace" }

func (c *NamespaceDeleteCommand) Help() string {
	return helpText(`
Usage: drover namespace delete [options] <namespace>

  Deletes the namespace. The default namespace cannot be deleted, nor one
  that still has jobs (purge them first: drover job stop -purge).`, "")
}

func (c *NamespaceDeleteCommand) Run(args []string) int {
	fs := c.flagSet("namespace delete")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("namespace delete", "one argument: <namespace>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	if _, err := client.Namespaces().Delete(ctx, args[0], nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error deleting namespace %q: %s", args[0], err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully deleted namespace %q!", args[0]))
	return 0
}

// applyNamespace puts job in the namespace -namespace (or
// DROVER_NAMESPACE) names when its file names none: parsing leaves such
// a job in "default", and the job's own namespace is what the servers
// use.
func (m *Meta) applyNamespace(job *structs.Job) {
	ns := m.namespace
	if ns == "" {
		ns = os.Getenv(api.EnvNamespace)
	}
	if ns != "" && job.Namespace == structs.DefaultNamespace {
		job.Namespace = ns
	}
}
