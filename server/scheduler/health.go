package scheduler

import (
	"fmt"

	"github.com/droverhq/drover/structs"
)

// stopIfDeviceUnhealthy stops a live allocation that holds a device
// instance its node reports unhealthy (or no longer has), with a
// description naming the device and the node's reason. The allocation's
// name is then placed again like any other missing one; placement never
// picks unhealthy instances, so the replacement lands on healthy GPUs of
// the same node or elsewhere. It reports whether it stopped a.
func (r *reconciliation) stopIfDeviceUnhealthy(a *structs.Allocation, node *structs.Node) bool {
	desc := unhealthyDevice(a, node)
	if desc == "" {
		return false
	}
	r.stops = append(r.stops, stop{alloc: a, desc: desc})
	return true
}

// unhealthyDevice returns why the first device a holds is unusable on
// node ("GPU <uuid> unhealthy: <reason>"), or "" when all are healthy.
func unhealthyDevice(a *structs.Allocation, node *structs.Node) string {
	ids := a.DeviceIDs()
	if len(ids) == 0 || node == nil {
		return ""
	}
	instances := map[string]*structs.NodeDevice{}
	if node.NodeResources != nil {
		for _, g := range node.NodeResources.Devices {
			for _, inst := range g.Instances {
				if inst != nil {
					instances[inst.ID] = inst
				}
			}
		}
	}
	for _, id := range ids {
		inst := instances[id]
		switch {
		case inst == nil:
			return fmt.Sprintf("GPU %s unhealthy: no longer on the node", id)
		case !inst.Healthy:
			return fmt.Sprintf("GPU %s unhealthy: %s", id, inst.HealthDescription)
		}
	}
	return ""
}
