package command

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/droverhq/drover/api"
)

// MonitorCommand is `drover monitor`: Nomad's, streaming the agent's log.
type MonitorCommand struct{ Meta }

func (c *MonitorCommand) Synopsis() string {
	return "Stream the logs of a Drover agent"
}

func (c *MonitorCommand) Help() string {
	return helpText(`
Usage: drover monitor [options]

  Streams the log lines of the agent the CLI talks to, from now until
  interrupted, at -log-level and above, whatever level the agent itself
  logs at. A reader slower than the agent loses lines rather than slowing
  the agent; a line in the stream says how many. With ACLs on it needs a
  token with agent read.`, `
Monitor Options:

  -log-level <level>
    The lowest level shown: trace, debug, info (the default), warn or
    error.

  -json
    Print hclog's JSON lines instead of its text lines.

  -node-id <id>, -server-id <name>
    The agent to monitor; only the one the CLI talks to is supported yet
    (its node ID, its server name, or "leader" when it leads).`)
}

func (c *MonitorCommand) Run(args []string) int {
	var o api.MonitorOptions
	fs := c.flagSet("monitor")
	fs.StringVar(&o.LogLevel, "log-level", "info", "")
	fs.BoolVar(&o.JSON, "json", false, "")
	fs.StringVar(&o.NodeID, "node-id", "", "")
	fs.StringVar(&o.ServerID, "server-id", "", "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("monitor", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	ctx, cancel := untilClosed(ctx, c.ShutdownCh)
	defer cancel()
	if err := streamMonitor(ctx, client, o, c.stdout()); err != nil {
		c.Ui.Error(fmt.Sprintf("Error monitoring the agent: %s", err))
		return exitError
	}
	return 0
}

// streamMonitor copies the agent's log to out until ctx ends (no error)
// or the agent closes the stream.
func streamMonitor(ctx context.Context, client *api.Client, o api.MonitorOptions, out io.Writer) error {
	body, err := client.Agent().Monitor(ctx, o)
	if err != nil {
		return err
	}
	defer body.Close()
	if _, err := io.Copy(out, body); err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("read the log stream: %w", err)
	}
	return nil
}

// untilClosed returns ctx ended also when done closes (nil: never).
func untilClosed(ctx context.Context, done <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if done == nil {
		return ctx, cancel
	}
	// Ends with ctx: the returned cancel stops it.
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
