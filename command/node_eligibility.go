package command

import (
	"fmt"

	"github.com/droverhq/drover/structs"
)

// NodeEligibilityCommand is `drover node eligibility -enable|-disable
// <node>`.
type NodeEligibilityCommand struct{ Meta }

func (c *NodeEligibilityCommand) Synopsis() string {
	return "Allow or stop new allocations on a node"
}

func (c *NodeEligibilityCommand) Help() string {
	return helpText(`
Usage: drover node eligibility [options] <node>

  Sets whether the scheduler may place new allocations on the node (by ID or
  a unique prefix of one). An ineligible node keeps what runs on it. Needs
  node:write.`, `
Eligibility Options:

  -enable
    Make the node eligible for new allocations.

  -disable
    Make the node ineligible for new allocations.`)
}

func (c *NodeEligibilityCommand) Run(args []string) int {
	var enable, disable bool
	fs := c.flagSet("node eligibility")
	fs.BoolVar(&enable, "enable", false, "")
	fs.BoolVar(&disable, "disable", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return 1
	}
	if enable == disable {
		return c.usageError("node eligibility", "exactly one of -enable and -disable")
	}
	if len(args) != 1 {
		return c.usageError("node eligibility", "one argument: <node>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return 1
	}
	ctx, stop := c.context()
	defer stop()
	node, _, err := client.Nodes().Info(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading node %q: %s", args[0], err))
		return 1
	}
	elig := structs.NodeSchedulingEligible
	if disable {
		elig = structs.NodeSchedulingIneligible
	}
	if _, _, err := client.Nodes().UpdateEligibility(ctx, node.ID, elig, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error updating scheduling eligibility: %s", err))
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Node %q scheduling eligibility set: %s", node.ID, elig))
	return 0
}
