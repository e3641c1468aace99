package command

import "fmt"

// SystemGCCommand is `drover system gc`.
type SystemGCCommand struct{ Meta }

func (c *SystemGCCommand) Synopsis() string {
	return "Run the servers' garbage collection now"
}

func (c *SystemGCCommand) Help() string {
	return helpText(`
Usage: drover system gc [options]

  Collects every finished job, evaluation and allocation and every down
  node now, whatever its age (the server's job_gc_threshold,
  eval_gc_threshold and node_gc_threshold are ignored). With ACLs on it
  needs a management token.`, "")
}

func (c *SystemGCCommand) Run(args []string) int {
	fs := c.flagSet("system gc")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("system gc", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	if _, err := client.System().GarbageCollect(ctx, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error running garbage collection: %s", err))
		return exitError
	}
	c.Ui.Output("Garbage collection done")
	return 0
}
