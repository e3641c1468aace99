package command

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/droverhq/drover/structs"
)

// QuotaApplyCommand is `drover quota apply FILE`.
type QuotaApplyCommand struct {
	Meta
	// Stdin is read for the file "-"; nil means os.Stdin.
	Stdin io.Reader
}

func (c *QuotaApplyCommand) Synopsis() string { return "Create or update a quota" }

func (c *QuotaApplyCommand) Help() string {
	return helpText(`
Usage: drover quota apply [options] <file>

  Creates or replaces the quota specification in <file> ("-" reads
  stdin), HCL or JSON. A quota caps what the allocations of the namespaces
  that name it (drover namespace apply -quota) hold together, per region:

    quota "team-a-gpus" {
      description = "Team A's GPUs"
      limit {
        region = "global"
        region_limit {
          gpu        = 2          # GPUs; a slice counts as its compute share
          gpu_memory = "160 GiB"  # whole GPUs' memory plus slices' memory
          cpu        = 4000       # MHz
          memory     = 8192       # MiB, or a size such as "8 GiB"
        }
      }
    }

  Nomad's form (name = "..." at the top level) and Nomad's JSON shape
  (Name, Limits, Region, RegionLimit with CPU, MemoryMB, GPUs and
  GPUMemoryMB) are read too. As in Nomad, a limit of 0 (or none) is
  unlimited and -1 allows none. Raising a quota places the allocations it
  held back.`, "")
}

func (c *QuotaApplyCommand) Run(args []string) int {
	fs := c.flagSet("quota apply")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("quota apply", "one argument: <file>")
	}
	spec, ok := c.loadQuota(args[0])
	if !ok {
		return exitError
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	if _, err := client.Quotas().Register(ctx, spec, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error applying quota %q: %s", spec.Name, err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully applied quota specification %q!", spec.Name))
	return 0
}

// loadQuota reads and parses a quota file, printing every problem.
func (c *QuotaApplyCommand) loadQuota(path string) (*structs.QuotaSpec, bool) {
	var src []byte
	var err error
	name := path
	if path == "-" {
		stdin := c.Stdin
		if stdin == nil {
			stdin = os.Stdin
		}
		name = "<stdin>"
		src, err = io.ReadAll(stdin)
	} else {
		src, err = os.ReadFile(path)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading quota file %s: %s", path, err))
		return nil, false
	}
	spec, err := parseQuotaSpec(name, src)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error parsing quota file %s:", path))
		for _, line := range quotaErrorLines(err) {
			c.Ui.Error(line)
		}
		return nil, false
	}
	return spec, true
}

// QuotaListCommand is `drover quota list`.
type QuotaListCommand struct{ Meta }

func (c *QuotaListCommand) Synopsis() string { return "List quotas" }

func (c *QuotaListCommand) Help() string {
	return helpText(`
Usage: drover quota list [options]

  Lists the quota specifications.`, `
List Options:

  -json
    Print the quotas as JSON.`)
}

func (c *QuotaListCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("quota list")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("quota list", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	qs, _, err := client.Quotas().List(ctx, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing quotas: %s", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(qs)
	}
	if len(qs) == 0 {
		c.Ui.Output("No quotas")
		return 0
	}
	rows := make([][]string, 0, len(qs))
	for _, q := range qs {
		if q != nil {
			rows = append(rows, []string{q.Name, orNone(q.Description)})
		}
	}
	c.Ui.Output(formatTable([]string{"Name", "Description"}, rows))
	return 0
}

// QuotaStatusCommand is `drover quota status NAME`.
type QuotaStatusCommand struct{ Meta }

func (c *QuotaStatusCommand) Synopsis() string { return "Show a quota's limits and usage" }

func (c *QuotaStatusCommand) Help() string {
	return helpText(`
Usage: drover quota status [options] <quota>

  Shows the quota's limits and what the allocations of its namespaces
  hold against them in this region ("used / limit").`, `
Status Options:

  -json
    Print the quota and its usage as JSON.`)
}

func (c *QuotaStatusCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("quota status")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("quota status", "one argument: <quota>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	spec, _, err := client.Quotas().Info(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading quota %q: %s", args[0], err))
		return exitError
	}
	usage, _, err := client.Quotas().Usage(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the usage of quota %q: %s", args[0], err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(map[string]any{"Quota": spec, "Usage": usage})
	}
	var namespaces []string
	if usage.Usage != nil {
		namespaces = usage.Usage.Namespaces
	}
	c.Ui.Output(formatKV([]kv{
		{"Name", spec.Name},
		{"Description", orNone(spec.Description)},
		{"Namespaces", orNone(strings.Join(namespaces, ", "))},
	}))
	c.Ui.Output("\nQuota Limits")
	c.Ui.Output(formatQuotaLimits(spec, usage))
	return 0
}

// formatQuotaLimits renders one row per region limit: "used / limit" for
// the answering agent's region, the limit alone elsewhere.
func formatQuotaLimits(spec *structs.QuotaSpec, usage *structs.QuotaUsageResponse) string {
	rows := make([][]string, 0, len(spec.Limits))
	for _, l := range spec.Limits {
		if l == nil || l.RegionLimit == nil {
			continue
		}
		var used *structs.QuotaResources
		if usage != nil && usage.Usage != nil && l.Region == usage.Region {
			used = &usage.Usage.Used
		}
		rows = append(rows, quotaRow(l.Region, l.RegionLimit, used))
	}
	return formatTable(quotaHeaders, rows)
}

// formatQuotaUsage renders the usage answer's region alone.
func formatQuotaUsage(usage *structs.QuotaUsageResponse) string {
	var used *structs.QuotaResources
	if usage.Usage != nil {
		used = &usage.Usage.Used
	}
	limit := usage.Limit
	if limit == nil {
		limit = &structs.RegionLimit{}
	}
	return formatTable(quotaHeaders, [][]string{quotaRow(usage.Region, limit, used)})
}

var quotaHeaders = []string{"Region", "CPU Usage", "Memory Usage", "GPU Usage", "GPU Memory Usage"}

func quotaRow(region string, limit *structs.RegionLimit, used *structs.QuotaResources) []string {
	mhz := func(v int64) string { return fmt.Sprintf("%d MHz", v) }
	mib := func(v int64) string { return structs.FormatBytes(uint64(max(v, 0)) << 20) }
	var u structs.QuotaResources
	if used != nil {
		u = *used
	}
	known := used != nil
	cell := func(v, limit int64, format func(int64) string) string {
		shown := "-"
		if known {
			shown = format(v)
		}
		switch {
		case limit == 0:
			return shown + " / unlimited"
		case limit < 0:
			return shown + " / none allowed"
		}
		return shown + " / " + format(limit)
	}
	return []string{
		region,
		cell(u.CPU, limit.CPU, mhz),
		cell(u.MemoryMB, limit.MemoryMB, mib),
		cell(u.GPUCompute, limit.GPUs*structs.WholeGPU, structs.FormatGPUs),
		cell(u.GPUMemoryMB, limit.GPUMemoryMB, mib),
	}
}

// QuotaDeleteCommand is `drover quota delete NAME`.
type QuotaDeleteCommand struct{ Meta }

func (c *QuotaDeleteCommand) Synopsis() string { return "Delete a quota" }

func (c *QuotaDeleteCommand) Help() string {
	return helpText(`
Usage: drover quota delete [options] <quota>

  Deletes the quota specification. A quota a namespace names cannot be
  deleted: detach it first (drover namespace apply -quota= <namespace>).`, "")
}

func (c *QuotaDeleteCommand) Run(args []string) int {
	fs := c.flagSet("quota delete")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("quota delete", "one argument: <quota>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	if _, err := client.Quotas().Delete(ctx, args[0], nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error deleting quota %q: %s", args[0], err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully deleted quota specification %q!", args[0]))
	return 0
}
