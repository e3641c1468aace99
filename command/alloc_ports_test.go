package command

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestAllocPortsGolden(t *testing.T) {
	a := testAllocs()[0].Copy()
	if a.AllocatedResources == nil {
		a.AllocatedResources = &structs.AllocatedResources{}
	}
	a.Job = a.Job.Copy()
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	tg.Networks = []*structs.NetworkResource{{
		ReservedPorts: []structs.Port{{Label: "metrics", Value: 9100}},
		DynamicPorts:  []structs.Port{{Label: "http", To: 8080}},
	}}
	a.AllocatedResources.Shared.Ports = []structs.AllocatedPortMapping{
		{Label: "http", Value: 23456, To: 8080, HostIP: "10.0.0.7"},
		{Label: "metrics", Value: 9100, HostIP: "10.0.0.7"},
	}
	golden(t, "alloc_status_ports", formatAlloc(testNow, a, false))
}
