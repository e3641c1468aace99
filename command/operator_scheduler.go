package command

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/droverhq/drover/structs"
)

// OperatorSchedulerGetConfigCommand is `drover operator scheduler
// get-config`.
type OperatorSchedulerGetConfigCommand struct{ Meta }

func (c *OperatorSchedulerGetConfigCommand) Synopsis() string {
	return "Show the scheduler configuration"
}

func (c *OperatorSchedulerGetConfigCommand) Help() string {
	return helpText(`
Usage: drover operator scheduler get-config [options]

  Shows the cluster's scheduler configuration: the algorithm that ranks
  the nodes an allocation fits on (binpack, spread, or fgd, the
  fragmentation-aware default).`, `
Get Config Options:

  -json
    Print the configuration as JSON.`)
}

func (c *OperatorSchedulerGetConfigCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("operator scheduler get-config")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("operator scheduler get-config", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	resp, _, err := client.Operator().SchedulerGetConfiguration(ctx, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the scheduler configuration: %s", err))
		return exitError
	}
	cfg := resp.SchedulerConfig
	if cfg == nil {
		cfg = structs.DefaultSchedulerConfiguration()
	}
	if asJSON {
		return c.outputJSON(cfg)
	}
	c.Ui.Output(formatSchedulerConfig(cfg))
	return 0
}

func formatSchedulerConfig(cfg *structs.SchedulerConfiguration) string {
	algorithm := cfg.Algorithm()
	if algorithm == structs.DefaultSchedulerAlgorithm {
		algorithm += " (default)"
	}
	return formatKV([]kv{
		{"Scheduler Algorithm", algorithm},
		{"Create Index", strconv.FormatUint(cfg.CreateIndex, 10)},
		{"Modify Index", strconv.FormatUint(cfg.ModifyIndex, 10)},
	})
}

// OperatorSchedulerSetConfigCommand is `drover operator scheduler
// set-config`.
type OperatorSchedulerSetConfigCommand struct{ Meta }

func (c *OperatorSchedulerSetConfigCommand) Synopsis() string {
	return "Change the scheduler configuration"
}

func (c *OperatorSchedulerSetConfigCommand) Help() string {
	return helpText(`
Usage: drover operator scheduler set-config [options]

  Changes the cluster's scheduler configuration. Settings not given keep
  their current values. Evaluations that start after the change use it.`, `
Set Config Options:

  -scheduler-algorithm=<binpack|spread|fgd>
    How the scheduler ranks the nodes an allocation fits on: binpack fills
    the fullest nodes, spread the emptiest, fgd (the default) is
    fragmentation-aware bin-packing that keeps GPUs placeable.

  -memory-oversubscription=<true|false>
    Whether tasks' memory_max takes effect (off by default): with it off,
    a task's memory limit is its memory, whatever memory_max says.

  -check-index=<index>
    Change the configuration only if its modify index is still <index>
    (0: only if it was never set), so that concurrent changes are not
    lost.`)
}

func (c *OperatorSchedulerSetConfigCommand) Run(args []string) int {
	var algorithm, checkIndex, oversub string
	fs := c.flagSet("operator scheduler set-config")
	fs.StringVar(&algorithm, "scheduler-algorithm", "", "")
	fs.StringVar(&oversub, "memory-oversubscription", "", "")
	fs.StringVar(&checkIndex, "check-index", "", "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("operator scheduler set-config", "no arguments")
	}
	if algorithm == "" && oversub == "" {
		c.Ui.Error("Nothing to change: give -scheduler-algorithm or -memory-oversubscription.")
		c.Ui.Error("Run 'drover operator scheduler set-config -help' for usage.")
		return exitError
	}
	var change schedulerChange
	if algorithm != "" {
		update := &structs.SchedulerConfiguration{SchedulerAlgorithm: strings.ToLower(algorithm)}
		if err := update.Validate(); err != nil {
			c.Ui.Error(fmt.Sprintf("Invalid -scheduler-algorithm %q: want one of %s", algorithm, strings.Join(structs.SchedulerAlgorithms, ", ")))
			return exitError
		}
		change.algorithm = update.SchedulerAlgorithm
	}
	if oversub != "" {
		on, err := strconv.ParseBool(oversub)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Invalid -memory-oversubscription %q: want true or false", oversub))
			return exitError
		}
		change.oversubscribe = &on
	}
	return c.set(change, checkIndex)
}

// schedulerChange is what set-config changes; the rest keeps its value.
type schedulerChange struct {
	algorithm     string
	oversubscribe *bool
}

// set reads the current configuration, applies update's settings to it,
// and writes it back (with a check-and-set when checkIndex is given).
func (c *OperatorSchedulerSetConfigCommand) set(update schedulerChange, checkIndex string) int {
	var cas *uint64
	if checkIndex != "" {
		idx, err := strconv.ParseUint(checkIndex, 10, 64)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Invalid -check-index %q: want a Raft index", checkIndex))
			return exitError
		}
		cas = &idx
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	current, _, err := client.Operator().SchedulerGetConfiguration(ctx, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the scheduler configuration: %s", err))
		return exitError
	}
	cfg := current.SchedulerConfig.Copy()
	if cfg == nil {
		cfg = structs.DefaultSchedulerConfiguration()
	}
	if update.algorithm != "" {
		cfg.SchedulerAlgorithm = update.algorithm
	}
	if update.oversubscribe != nil {
		cfg.MemoryOversubscriptionEnabled = *update.oversubscribe
	}
	ops := client.Operator()
	set := ops.SchedulerSetConfiguration
	if cas != nil {
		cfg.ModifyIndex = *cas
		set = ops.SchedulerCASConfiguration
	}
	resp, _, err := set(ctx, cfg, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error updating the scheduler configuration: %s", err))
		return exitError
	}
	if !resp.Updated {
		c.Ui.Error(fmt.Sprintf("Scheduler configuration not updated: its modify index is no longer %d (run get-config and retry)", *cas))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Scheduler configuration updated: algorithm %s, memory oversubscription %t (index %d)", cfg.Algorithm(), cfg.MemoryOversubscriptionEnabled, resp.Index))
	return 0
}
