package structs

import "testing"

func TestJobGPUCount(t *testing.T) {
	job := &Job{TaskGroups: []*TaskGroup{
		{Count: 3, Tasks: []*Task{
			{Resources: &Resources{Devices: []*RequestedDevice{{Name: "nvidia/gpu", Count: 2}, {Name: "nvidia/fpga", Count: 5}}}},
			{Resources: &Resources{Devices: []*RequestedDevice{{Name: "gpu", Count: 1}}}},
		}},
		{Count: 2, Tasks: []*Task{{Resources: nil}, {Resources: &Resources{Devices: []*RequestedDevice{{Name: "nvidia/gpu/H100", Count: 4}}}}}},
	}}
	if got, want := job.GPUCount(), 3*(2+1)+2*4; got != want {
		t.Errorf("GPUCount() = %d, want %d", got, want)
	}
	if got := job.Stub(nil).GPUs; got != 17 {
		t.Errorf("Stub().GPUs = %d, want 17", got)
	}
}
