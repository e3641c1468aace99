package command

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/structs"
)

// NodeStatusCommand is `drover node status [ID]`.
type NodeStatusCommand struct{ Meta }

func (c *NodeStatusCommand) Synopsis() string { return "List nodes or show one node and its GPUs" }

func (c *NodeStatusCommand) Help() string {
	return helpText(`
Usage: drover node status [options] [<node>]

  Without an argument, lists the client nodes with their GPU counts. With a
  node ID (or a unique prefix of one), shows the node, a summary of its
  attributes, its resources in use, each GPU (model, memory, UUID, health,
  and which allocation holds it) and its allocations.`, `
Status Options:

`+outputOptionsHelp+`

  -verbose
    Print full IDs and every attribute.`)
}

// nodeStatus is what `node status <id> -json` prints.
type nodeStatus struct {
	Node        *structs.Node
	Allocations []*structs.Allocation
}

func (c *NodeStatusCommand) Run(args []string) int {
	var verbose bool
	fs := c.flagSet("node status")
	out := addOutputFlags(fs)
	fs.BoolVar(&verbose, "verbose", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return 1
	}
	if len(args) > 1 {
		return c.usageError("node status", "at most one argument: [<node>]")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return 1
	}
	ctx, stop := c.context()
	defer stop()
	if len(args) == 0 {
		nodes, _, err := client.Nodes().List(ctx, nil)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error listing nodes: %s", err))
			return 1
		}
		if out.set() {
			return c.outputFormatted(out, nodes)
		}
		if len(nodes) == 0 {
			c.Ui.Output("No nodes registered")
			return 0
		}
		c.Ui.Output(formatNodeList(nodes, verbose))
		return 0
	}
	node, _, err := client.Nodes().Info(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading node %q: %s", args[0], err))
		return 1
	}
	allocs, _, err := client.Nodes().Allocations(ctx, node.ID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading allocations of node %q: %s", node.ID, err))
		return 1
	}
	if out.set() {
		return c.outputFormatted(out, nodeStatus{Node: node, Allocations: allocs})
	}
	c.Ui.Output(formatNode(c.now(), node, allocs, verbose))
	return 0
}

// formatNodeList renders the node list table.
func formatNodeList(nodes []*structs.NodeListStub, verbose bool) string {
	rows := make([][]string, len(nodes))
	for i, n := range nodes {
		rows[i] = []string{shortID(n.ID, verbose), n.Datacenter, n.Name, orNone(n.NodeClass),
			strconv.FormatBool(n.Drain), n.SchedulingEligibility, n.Status, gpuCount(n.GPUs, n.HealthyGPUs)}
	}
	return formatTable([]string{"ID", "DC", "Name", "Class", "Drain", "Eligibility", "Status", "GPUs"}, rows)
}

// gpuCount renders "4", or "4 (1 unhealthy)".
func gpuCount(total, healthy int) string {
	if healthy >= total {
		return strconv.Itoa(total)
	}
	return fmt.Sprintf("%d (%d unhealthy)", total, total-healthy)
}

// formatNode renders one node: details, attributes, resources, GPUs and
// allocations.
func formatNode(now time.Time, n *structs.Node, allocs []*structs.Allocation, verbose bool) string {
	drivers := make([]string, 0, len(n.Drivers))
	for _, name := range sortedKeys(n.Drivers) {
		if d := n.Drivers[name]; d != nil && d.Detected && d.Healthy {
			drivers = append(drivers, name)
		}
	}
	sections := []string{formatKV([]kv{
		{"ID", n.ID},
		{"Name", n.Name},
		{"Class", orNone(n.NodeClass)},
		{"DC", n.Datacenter},
		{"HTTP Addr", orNone(n.HTTPAddr)},
		{"Drain", strconv.FormatBool(n.Drain)},
		{"Eligibility", n.SchedulingEligibility},
		{"Status", n.Status + describe(n.StatusDescription)},
		{"Status Updated", formatAgo(now, n.StatusUpdatedAt)},
		{"Drivers", orNone(strings.Join(drivers, ","))},
		{"Topology", nodeTopology(n)},
	})}
	if attrs := attributeSummary(n.Attributes, verbose); len(attrs) > 0 {
		sections = append(sections, "Attributes\n"+formatKV(attrs))
	}
	sections = append(sections, "Allocated Resources\n"+formatNodeUsage(n, allocs))
	if rows := gpuRows(n, allocs); len(rows) > 0 {
		sections = append(sections, "GPUs\n"+formatGPUTable(rows, verbose))
	}
	if len(allocs) == 0 {
		sections = append(sections, "Allocations\nNo allocations placed")
	} else {
		sections = append(sections, "Allocations\n"+formatNodeAllocs(now, allocs, verbose))
	}
	return strings.Join(sections, "\n\n")
}

// summaryAttrPrefixes are the attributes node status shows without -verbose.
var summaryAttrPrefixes = []string{"cpu.", "drover.", "driver.", "kernel.", "memory.", "nvidia.", "os.", structs.TopologyAttrPrefix}

// nodeTopology words the node's place in the network, closest level
// first ("block nvl72-07, rack r12, spine s3"; <none> when it declares
// none).
func nodeTopology(n *structs.Node) string {
	var parts []string
	for _, level := range structs.TopologyLevels {
		if v := n.TopologyValue(level); v != "" {
			parts = append(parts, level+" "+v)
		}
	}
	return orNone(strings.Join(parts, ", "))
}

// attributeSummary returns the node's attributes worth a glance, or all
// of them when verbose.
func attributeSummary(attrs map[string]string, verbose bool) []kv {
	var out []kv
	for _, k := range sortedKeys(attrs) {
		if verbose || slices.ContainsFunc(summaryAttrPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			out = append(out, kv{k, attrs[k]})
		}
	}
	return out
}

// formatNodeUsage renders CPU, memory and GPUs held by the node's
// non-terminal allocations against its capacity.
func formatNodeUsage(n *structs.Node, allocs []*structs.Allocation) string {
	var cpu, mem int64
	held := 0
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		c, m := a.Comparable()
		cpu, mem = cpu+c, mem+m
		held += len(a.DeviceIDs())
	}
	var capCPU, capMem int64
	if n.NodeResources != nil {
		capCPU, capMem = n.NodeResources.Cpu.CpuShares, n.NodeResources.Memory.MemoryMB
	}
	total, _ := n.GPUCount()
	return formatTable([]string{"CPU", "Memory", "GPUs"}, [][]string{{
		fmt.Sprintf("%d/%d MHz", cpu, capCPU),
		fmt.Sprintf("%s/%s", structs.FormatBytes(uint64(mem)<<20), structs.FormatBytes(uint64(capMem)<<20)),
		fmt.Sprintf("%d/%d", held, total),
	}})
}

// gpuRow is one GPU instance of a node and who holds it.
type gpuRow struct {
	Model   string
	Memory  string
	UUID    string
	Healthy bool
	Health  string // description when unhealthy
	// HeldBy is the non-terminal allocation holding the GPU, or nil.
	HeldBy *structs.Allocation
}

// gpuRows lists the node's GPU instances, in device-group order then by
// UUID, each with the non-terminal allocation holding it, if any.
func gpuRows(n *structs.Node, allocs []*structs.Allocation) []gpuRow {
	if n.NodeResources == nil {
		return nil
	}
	holder := map[string]*structs.Allocation{}
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		for _, id := range a.DeviceIDs() {
			holder[id] = a
		}
	}
	var rows []gpuRow
	for _, g := range n.NodeResources.Devices {
		if g.Type != "gpu" {
			continue
		}
		insts := slices.Clone(g.Instances)
		slices.SortFunc(insts, func(a, b *structs.NodeDevice) int { return strings.Compare(a.ID, b.ID) })
		for _, inst := range insts {
			mem := inst.Attributes[structs.DeviceAttrMemory]
			if mem == "" {
				mem = g.Attributes[structs.DeviceAttrMemory]
			}
			rows = append(rows, gpuRow{Model: g.Name, Memory: orNone(mem), UUID: inst.ID,
				Healthy: inst.Healthy, Health: inst.HealthDescription, HeldBy: holder[inst.ID]})
		}
	}
	return rows
}

// formatGPUTable renders gpuRows.
func formatGPUTable(rows []gpuRow, verbose bool) string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		health := "healthy"
		if !r.Healthy {
			health = "unhealthy" + describe(r.Health)
		}
		use := "free"
		if r.HeldBy != nil {
			use = fmt.Sprintf("held by %s (%s)", shortID(r.HeldBy.ID, verbose), r.HeldBy.Name)
		}
		out[i] = []string{r.Model, r.Memory, r.UUID, health, use}
	}
	return formatTable([]string{"Model", "Memory", "UUID", "Health", "Use"}, out)
}

// formatNodeAllocs renders a node's allocations, newest first.
func formatNodeAllocs(now time.Time, allocs []*structs.Allocation, verbose bool) string {
	stubs := make([]*structs.AllocListStub, len(allocs))
	for i, a := range allocs {
		stubs[i] = a.Stub()
	}
	slices.SortStableFunc(stubs, func(a, b *structs.AllocListStub) int { return cmp.Compare(b.CreateIndex, a.CreateIndex) })
	rows := make([][]string, len(stubs))
	for i, a := range stubs {
		rows[i] = []string{shortID(a.ID, verbose), a.JobID, a.TaskGroup, a.DesiredStatus, a.ClientStatus,
			formatAgo(now, a.CreateTime), gpuList(allocatedGPUs(a.AllocatedResources), verbose)}
	}
	return formatTable([]string{"ID", "Job ID", "Task Group", "Desired", "Status", "Created", "GPUs"}, rows)
}
