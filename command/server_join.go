package command

import (
	"fmt"
	"strings"
)

// ServerJoinCommand is `drover server join ADDR...`.
type ServerJoinCommand struct{ Meta }

func (c *ServerJoinCommand) Synopsis() string { return "Join the agent's server to other servers" }

func (c *ServerJoinCommand) Help() string {
	return helpText(`
Usage: drover server join [options] <addr> [<addr>...]

  Joins the agent's server to the servers at the given serf addresses
  ("host:port"; the serf port defaults to 4648). Joining one server of a
  cluster is enough: gossip tells the rest. Servers started with
  bootstrap_expect bootstrap once that many have met; the leader adds
  servers that join later to Raft.`, "")
}

func (c *ServerJoinCommand) Run(args []string) int {
	fs := c.flagSet("server join")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) == 0 {
		return c.usageError("server join", "at least one argument: <addr> [<addr>...]")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	resp, err := client.Agent().Join(ctx, args...)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error joining %s: %s", strings.Join(args, ", "), err))
		return exitError
	}
	if resp.Error != "" {
		c.Ui.Error(fmt.Sprintf("Some joins failed: %s", resp.Error))
	}
	c.Ui.Output(fmt.Sprintf("Joined %s successfully", plural(resp.NumJoined, "server")))
	return 0
}

// ServerForceLeaveCommand is `drover server force-leave NODE`.
type ServerForceLeaveCommand struct{ Meta }

func (c *ServerForceLeaveCommand) Synopsis() string {
	return "Remove a failed server from the cluster now"
}

func (c *ServerForceLeaveCommand) Help() string {
	return helpText(`
Usage: drover server force-leave [options] <node>

  Marks a failed server as having left: the leader removes it from Raft
  at once, instead of after the dead server timeout. <node> is the name
  'drover server members' shows ("name.region"), or the name alone for a
  server of the agent's region. A server that is alive cannot be forced
  out: stop it first.`, `
Force-Leave Options:

  -prune
    Also forget the server in the gossip pool right away.`)
}

func (c *ServerForceLeaveCommand) Run(args []string) int {
	var prune bool
	fs := c.flagSet("server force-leave")
	fs.BoolVar(&prune, "prune", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("server force-leave", "one argument: <node>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	if err := client.Agent().ForceLeave(ctx, args[0], prune); err != nil {
		c.Ui.Error(fmt.Sprintf("Error forcing %s to leave: %s", args[0], err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Server %s forced to leave; the leader removes it from Raft", args[0]))
	return 0
}
