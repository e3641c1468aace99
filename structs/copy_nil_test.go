package structs

import "testing"

// TestCopyToleratesNilElements: a request decoded from the wire may hold
// nil list or map elements; copying it must not panic.
func TestCopyToleratesNilElements(t *testing.T) {
	job := &Job{
		Constraints: []*Constraint{nil},
		Affinities:  []*Affinity{nil},
		TaskGroups: []*TaskGroup{nil, {Constraints: []*Constraint{nil}, Tasks: []*Task{nil, {
			Resources: &Resources{Devices: []*RequestedDevice{nil, {Constraints: []*Constraint{nil}}}},
		}}}},
	}
	if c := job.Copy(); len(c.TaskGroups) != 2 || c.TaskGroups[0] != nil || c.TaskGroups[1].Tasks[1].Resources.Devices[0] != nil {
		t.Errorf("job copy: nil elements not kept as nil")
	}
	node := &Node{Drivers: map[string]*DriverInfo{"x": nil}, NodeResources: &NodeResources{
		Devices: []*NodeDeviceResource{nil, {Instances: []*NodeDevice{nil}}},
	}}
	if c := node.Copy(); c.Drivers["x"] != nil || c.NodeResources.Devices[1].Instances[0] != nil {
		t.Errorf("node copy: nil elements not kept as nil")
	}
	alloc := &Allocation{
		AllocatedResources: &AllocatedResources{Tasks: map[string]*AllocatedTaskResources{"a": nil, "b": {Devices: []*AllocatedDeviceResource{nil}}}},
		TaskStates:         map[string]*TaskState{"a": nil, "b": {Events: []*TaskEvent{nil}}},
	}
	if c := alloc.Copy(); c.TaskStates["a"] != nil || c.TaskStates["b"].Events[0] != nil || c.AllocatedResources.Tasks["a"] != nil {
		t.Errorf("alloc copy: nil elements not kept as nil")
	}
}
