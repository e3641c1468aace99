package command

import (
	"fmt"
	"strconv"

	"github.com/droverhq/drover/api"
)

// OperatorRaftListPeersCommand is `drover operator raft list-peers`.
type OperatorRaftListPeersCommand struct{ Meta }

func (c *OperatorRaftListPeersCommand) Synopsis() string {
	return "List the servers in the Raft configuration"
}

func (c *OperatorRaftListPeersCommand) Help() string {
	return helpText(`
Usage: drover operator raft list-peers [options]

  Lists the servers in the Raft configuration: node name, server ID, RPC
  (and Raft) address, whether it leads or follows, and whether it votes.`, `
List Peers Options:

  -stale
    Answer from the agent's server even without a leader.

  -json
    Print the configuration as JSON.`)
}

func (c *OperatorRaftListPeersCommand) Run(args []string) int {
	var asJSON, stale bool
	fs := c.flagSet("operator raft list-peers")
	fs.BoolVar(&asJSON, "json", false, "")
	fs.BoolVar(&stale, "stale", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("operator raft list-peers", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	conf, err := client.Operator().RaftGetConfiguration(ctx, &api.QueryOptions{AllowStale: stale})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the Raft configuration: %s", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(conf)
	}
	c.Ui.Output(formatRaftPeers(conf.Servers))
	return 0
}

func formatRaftPeers(servers []*api.RaftServer) string {
	var rows [][]string
	for _, s := range servers {
		state := "follower"
		if s.Leader {
			state = "leader"
		}
		rows = append(rows, []string{orNone(s.Node), s.ID, s.Address, state, strconv.FormatBool(s.Voter), s.RaftProtocol})
	}
	return formatTable([]string{"Node", "ID", "Address", "State", "Voter", "RaftProtocol"}, rows)
}

// OperatorRaftRemovePeerCommand is `drover operator raft remove-peer`.
type OperatorRaftRemovePeerCommand struct{ Meta }

func (c *OperatorRaftRemovePeerCommand) Synopsis() string {
	return "Remove a server from the Raft configuration"
}

func (c *OperatorRaftRemovePeerCommand) Help() string {
	return helpText(`
Usage: drover operator raft remove-peer [options] -peer-id=<id> | -peer-address=<ip:port>

  Removes a server from the Raft configuration, for a server that is gone
  for good and cannot leave by itself. The leader makes the change; a
  server that is still alive in the gossip pool is added back by the
  leader, so stop it first (or use 'drover server force-leave' once it
  has failed). 'drover operator raft list-peers' shows the IDs and
  addresses.`, `
Remove Peer Options:

  -peer-id=<id>
    The Raft server ID of the peer to remove.

  -peer-address=<ip:port>
    The RPC address of the peer to remove.`)
}

func (c *OperatorRaftRemovePeerCommand) Run(args []string) int {
	var id, addr string
	fs := c.flagSet("operator raft remove-peer")
	fs.StringVar(&id, "peer-id", "", "")
	fs.StringVar(&addr, "peer-address", "", "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("operator raft remove-peer", "no arguments (give -peer-id or -peer-address)")
	}
	if (id == "") == (addr == "") {
		c.Ui.Error("Give exactly one of -peer-id and -peer-address.")
		c.Ui.Error("Run 'drover operator raft remove-peer -help' for usage.")
		return exitError
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	ops := client.Operator()
	which, remove := "ID "+id, ops.RaftRemovePeerByID
	if addr != "" {
		which, remove = "address "+addr, ops.RaftRemovePeerByAddress
	}
	if err := remove(ctx, id+addr, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error removing the peer with %s: %s", which, err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Removed the peer with %s from the Raft configuration", which))
	return 0
}
