package command

import (
	"fmt"
	"strconv"

	"github.com/droverhq/drover/api"
)

// ServerMembersCommand is `drover server members`.
type ServerMembersCommand struct{ Meta }

func (c *ServerMembersCommand) Synopsis() string {
	return "List the servers in the cluster's gossip pool"
}

func (c *ServerMembersCommand) Help() string {
	return helpText(`
Usage: drover server members [options]

  Lists the servers the agent's server knows through its serf pool: name,
  gossip address and port, status (alive, leaving, left, failed), whether
  it leads, its datacenter and region.`, `
Server Members Options:

  -detailed
    Also show each server's serf tags.

  -json
    Print the members as JSON.`)
}

func (c *ServerMembersCommand) Run(args []string) int {
	var asJSON, detailed bool
	fs := c.flagSet("server members")
	fs.BoolVar(&asJSON, "json", false, "")
	fs.BoolVar(&detailed, "detailed", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("server members", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	resp, err := client.Agent().Members(ctx)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying servers: %s", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(resp)
	}
	// Without a leader every server shows false; that is the answer.
	leader, _ := client.Status().Leader(ctx)
	c.Ui.Output(formatMembers(resp.Members, leader, detailed))
	return 0
}

// formatMembers renders the members table; the leader is the member whose
// rpc_addr tag is leader.
func formatMembers(members []*api.AgentMember, leader string, detailed bool) string {
	headers := []string{"Name", "Address", "Port", "Status", "Leader", "Raft Version", "Datacenter", "Region"}
	if detailed {
		headers = append(headers, "Tags")
	}
	var rows [][]string
	for _, m := range members {
		isLeader := leader != "" && m.Tags["rpc_addr"] == leader
		row := []string{
			m.Name, m.Addr, strconv.Itoa(int(m.Port)), m.Status, strconv.FormatBool(isLeader),
			"3", orNone(m.Tags["dc"]), orNone(m.Tags["region"]),
		}
		if detailed {
			row = append(row, formatTags(m.Tags))
		}
		rows = append(rows, row)
	}
	return formatTable(headers, rows)
}

// formatTags renders tags as "k=v,k=v" in key order.
func formatTags(tags map[string]string) string {
	out := ""
	for i, k := range sortedKeys(tags) {
		if i > 0 {
			out += ","
		}
		out += k + "=" + tags[k]
	}
	return out
}
