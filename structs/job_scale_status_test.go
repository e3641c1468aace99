package structs

import "testing"

// TestNewJobScaleStatus: canaries and terminal allocations are not
// counted; health is counted where it is decided.
func TestNewJobScaleStatus(t *testing.T) {
	yes, no := true, false
	job := &Job{ID: "web", Namespace: "default", ModifyIndex: 7, TaskGroups: []*TaskGroup{{Name: "w", Count: 3}}}
	allocs := []*Allocation{
		{TaskGroup: "w", ClientStatus: AllocClientStatusRunning, DesiredStatus: AllocDesiredStatusRun, DeploymentStatus: &AllocDeploymentStatus{Healthy: &yes}},
		{TaskGroup: "w", ClientStatus: AllocClientStatusRunning, DesiredStatus: AllocDesiredStatusRun, DeploymentStatus: &AllocDeploymentStatus{Healthy: &no}},
		{TaskGroup: "w", ClientStatus: AllocClientStatusPending, DesiredStatus: AllocDesiredStatusRun},
		{TaskGroup: "w", ClientStatus: AllocClientStatusRunning, DesiredStatus: AllocDesiredStatusRun, DeploymentStatus: &AllocDeploymentStatus{Canary: true}},
		{TaskGroup: "w", ClientStatus: AllocClientStatusComplete, DesiredStatus: AllocDesiredStatusStop},
		{TaskGroup: "gone", ClientStatus: AllocClientStatusRunning, DesiredStatus: AllocDesiredStatusRun},
	}
	st := NewJobScaleStatus(job, allocs)
	g := st.TaskGroups["w"]
	if len(st.TaskGroups) != 1 || st.JobModifyIndex != 7 || g.Desired != 3 || g.Placed != 3 || g.Running != 2 || g.Healthy != 1 || g.Unhealthy != 1 {
		t.Errorf("got %+v, group %+v; want desired 3, placed 3, running 2, one healthy, one unhealthy", st, g)
	}
}
