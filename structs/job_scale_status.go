package structs

// RPCJobScaleStatus reads a job's groups' desired and actual counts.
const RPCJobScaleStatus = "Job.ScaleStatus"

// JobScaleStatusResponse answers Job.ScaleStatus.
type JobScaleStatusResponse struct {
	JobScaleStatus *JobScaleStatus
	QueryMeta
}

// JobScaleStatus is Nomad's: per group, the count asked for and the
// allocations placed, running and of decided health. Canaries are not
// counted (Nomad's rule). Drover keeps no scaling events: Events is
// always empty.
type JobScaleStatus struct {
	JobID          string
	Namespace      string
	JobCreateIndex uint64
	JobModifyIndex uint64
	JobStopped     bool
	TaskGroups     map[string]*TaskGroupScaleStatus
}

// TaskGroupScaleStatus is one group's part of JobScaleStatus.
type TaskGroupScaleStatus struct {
	Desired   int
	Placed    int
	Running   int
	Healthy   int
	Unhealthy int
	Events    []any
}

// NewJobScaleStatus counts allocs, the job's, into its groups' status.
func NewJobScaleStatus(job *Job, allocs []*Allocation) *JobScaleStatus {
	st := &JobScaleStatus{
		JobID: job.ID, Namespace: job.Namespace, JobCreateIndex: job.CreateIndex, JobModifyIndex: job.ModifyIndex,
		JobStopped: job.Stop, TaskGroups: make(map[string]*TaskGroupScaleStatus, len(job.TaskGroups)),
	}
	for _, tg := range job.TaskGroups {
		st.TaskGroups[tg.Name] = &TaskGroupScaleStatus{Desired: tg.Count}
	}
	for _, a := range allocs {
		g := st.TaskGroups[a.TaskGroup]
		if g == nil || a.TerminalStatus() || a.DeploymentStatus != nil && a.DeploymentStatus.Canary {
			continue
		}
		g.Placed++
		if a.ClientStatus == AllocClientStatusRunning {
			g.Running++
		}
		switch {
		case a.DeploymentStatus.IsHealthy():
			g.Healthy++
		case a.DeploymentStatus.IsUnhealthy():
			g.Unhealthy++
		}
	}
	return st
}
