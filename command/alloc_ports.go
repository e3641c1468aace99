package command

import (
	"net"
	"strconv"

	"github.com/droverhq/drover/structs"
)

// formatPorts is the allocation's ports as Nomad's "Allocation
// Addresses" table: label, whether the scheduler chose the port, and
// host address -> the port the task binds; "" when it holds none.
func formatPorts(a *structs.Allocation) string {
	if a.AllocatedResources == nil || len(a.AllocatedResources.Shared.Ports) == 0 {
		return ""
	}
	static := map[string]bool{}
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			reserved, _ := tg.AskedPorts()
			for _, p := range reserved {
				static[p.Label] = true
			}
		}
	}
	var rows [][]string
	for _, p := range a.AllocatedResources.Shared.Ports {
		dynamic := "yes"
		if static[p.Label] {
			dynamic = "no"
		}
		addr := net.JoinHostPort(p.HostIP, strconv.Itoa(p.Value))
		if p.To > 0 && p.To != p.Value {
			addr += " -> " + strconv.Itoa(p.To)
		}
		rows = append(rows, []string{p.Label, dynamic, addr})
	}
	return "Allocation Addresses\n" + formatTable([]string{"Label", "Dynamic", "Address"}, rows)
}
