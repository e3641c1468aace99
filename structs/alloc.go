package structs

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Allocation desired statuses, set by the servers.
const (
	AllocDesiredStatusRun  = "run"
	AllocDesiredStatusStop = "stop"
)

// Allocation client statuses, reported by the client (lost by the servers).
const (
	AllocClientStatusPending  = "pending"
	AllocClientStatusRunning  = "running"
	AllocClientStatusComplete = "complete"
	AllocClientStatusFailed   = "failed"
	AllocClientStatusLost     = "lost"
)

// Task states.
const (
	TaskStatePending = "pending"
	TaskStateRunning = "running"
	TaskStateDead    = "dead"
)

// Task event types.
const (
	TaskReceived   = "Received"
	TaskSetup      = "Task Setup"
	TaskStarted    = "Started"
	TaskTerminated = "Terminated"
	TaskKilling    = "Killing"
	TaskKilled     = "Killed"
	TaskDriverFail = "Driver Failure"
	TaskRestarting = "Restarting"
	TaskNotRestart = "Not Restarting"
)

// Allocation is one placement of a task group on a node, holding the exact
// resources (GPU instances included) that the scheduler chose.
type Allocation struct {
	ID        string
	Namespace string
	EvalID    string
	Name      string // "<job>.<group>[<index>]"
	NodeID    string
	NodeName  string
	JobID     string
	Job       *Job
	TaskGroup string

	AllocatedResources *AllocatedResources
	Metrics            *AllocMetric

	DesiredStatus      string
	DesiredDescription string
	// PreemptedByAllocation is the allocation whose placement stopped
	// this one; PreemptedAllocations are those this one's placement
	// stopped (structs/preempt.go).
	PreemptedByAllocation string
	PreemptedAllocations  []string
	ClientStatus          string
	ClientDescription     string
	TaskStates            map[string]*TaskState
	// DeploymentID and DeploymentStatus place it in a deployment
	// (structs/deployment.go).
	DeploymentID     string                 `json:",omitempty"`
	DeploymentStatus *AllocDeploymentStatus `json:",omitempty"`
	// PreviousAllocation is the allocation this one replaces (an update
	// or a reschedule); a sticky ephemeral disk on the same node takes
	// its data (structs/ephemeral_disk.go).
	PreviousAllocation string `json:",omitempty"`

	CreateIndex      uint64
	ModifyIndex      uint64
	AllocModifyIndex uint64
	CreateTime       int64
	ModifyTime       int64
}

// AllocatedResources is what an allocation holds, per task.
type AllocatedResources struct {
	Tasks map[string]*AllocatedTaskResources
	// Shared is what the tasks hold together: ports (structs/network.go).
	Shared AllocatedSharedResources
}

// AllocatedTaskResources is what one task holds.
type AllocatedTaskResources struct {
	Cpu     AllocatedCpuResources
	Memory  AllocatedMemoryResources
	Devices []*AllocatedDeviceResource
}

// AllocatedCpuResources is CPU held, in MHz.
type AllocatedCpuResources struct {
	CpuShares int64
}

// AllocatedMemoryResources is memory held.
type AllocatedMemoryResources struct {
	MemoryMB int64
	// MemoryMaxMB is the task's memory_max: the hard limit, with
	// MemoryMB the reservation (0: MemoryMB is the limit).
	MemoryMaxMB int64 `json:",omitempty"`
}

// AllocatedDeviceResource is a set of instances of one device group held by
// a task.
type AllocatedDeviceResource struct {
	Vendor    string
	Type      string
	Name      string
	DeviceIDs []string
	// Compute (percent) and MemoryMB are set when the allocation holds a
	// slice of each instance rather than the whole of it; both zero means
	// whole instances.
	Compute  int    `json:",omitempty"`
	MemoryMB uint64 `json:",omitempty"`
}

// Slice reports whether d holds slices of its instances.
func (d *AllocatedDeviceResource) Slice() bool { return d.Compute > 0 || d.MemoryMB > 0 }

// ID returns "vendor/type/name", matching NodeDeviceResource.ID.
func (d *AllocatedDeviceResource) ID() string { return d.Vendor + "/" + d.Type + "/" + d.Name }

// TaskState is a task's lifecycle as the client reports it.
type TaskState struct {
	State    string
	Failed   bool
	Restarts uint64
	// StartedAt and FinishedAt are times (not unix nanoseconds) to match
	// Nomad's API; the zero time means never.
	StartedAt   time.Time
	FinishedAt  time.Time
	LastRestart time.Time
	Events      []*TaskEvent
	// LastCheckpoint is when the task last checkpointed (unix
	// nanoseconds, 0: never seen), for groups with a checkpoint block
	// (structs/checkpoint.go; Drover's).
	LastCheckpoint int64 `json:",omitempty"`
}

// TaskEvent is one step of a task's lifecycle.
type TaskEvent struct {
	Type           string
	Time           int64 // unix nanoseconds
	Message        string
	DisplayMessage string
	ExitCode       int
	Signal         int
	Details        map[string]string
}

// TerminalStatus reports whether the allocation will not run (again): the
// servers want it stopped or the client finished it.
func (a *Allocation) TerminalStatus() bool {
	return a.DesiredStatus == AllocDesiredStatusStop || a.ClientTerminalStatus()
}

// ClientTerminalStatus reports whether the client has finished the
// allocation.
func (a *Allocation) ClientTerminalStatus() bool {
	switch a.ClientStatus {
	case AllocClientStatusComplete, AllocClientStatusFailed, AllocClientStatusLost:
		return true
	}
	return false
}

// Index returns the allocation's index within its group, parsed from its
// name, or -1.
func (a *Allocation) Index() int {
	var idx int
	prefix := fmt.Sprintf("%s.%s[", a.JobID, a.TaskGroup)
	if len(a.Name) <= len(prefix) {
		return -1
	}
	if _, err := fmt.Sscanf(a.Name[len(prefix):], "%d]", &idx); err != nil {
		return -1
	}
	return idx
}

// AllocName returns the conventional allocation name.
func AllocName(job, group string, idx int) string {
	return fmt.Sprintf("%s.%s[%d]", job, group, idx)
}

// DeviceIDs returns every device instance ID the allocation holds.
func (a *Allocation) DeviceIDs() []string {
	if a.AllocatedResources == nil {
		return nil
	}
	var ids []string
	for _, t := range a.AllocatedResources.Tasks {
		for _, d := range t.Devices {
			ids = append(ids, d.DeviceIDs...)
		}
	}
	slices.Sort(ids)
	return ids
}

// Comparable sums the allocation's CPU and memory.
func (a *Allocation) Comparable() (cpu, memMB int64) {
	if a.AllocatedResources == nil {
		return 0, 0
	}
	for _, t := range a.AllocatedResources.Tasks {
		cpu += t.Cpu.CpuShares
		memMB += t.Memory.MemoryMB
	}
	return cpu, memMB
}

// Copy returns a deep copy of the allocation. The Job pointer is shared:
// jobs in state are immutable.
func (a *Allocation) Copy() *Allocation {
	if a == nil {
		return nil
	}
	c := *a
	c.AllocatedResources = a.AllocatedResources.Copy()
	c.Metrics = a.Metrics.Copy()
	c.PreemptedAllocations = slices.Clone(a.PreemptedAllocations)
	c.DeploymentStatus = a.DeploymentStatus.Copy()
	if a.TaskStates != nil {
		c.TaskStates = make(map[string]*TaskState, len(a.TaskStates))
		for k, v := range a.TaskStates {
			c.TaskStates[k] = v.Copy()
		}
	}
	return &c
}

// Copy returns a deep copy.
func (r *AllocatedResources) Copy() *AllocatedResources {
	if r == nil {
		return nil
	}
	c := &AllocatedResources{Tasks: make(map[string]*AllocatedTaskResources, len(r.Tasks)), Shared: r.Shared.Copy()}
	for name, t := range r.Tasks {
		if t == nil {
			c.Tasks[name] = nil
			continue
		}
		tc := *t
		tc.Devices = make([]*AllocatedDeviceResource, len(t.Devices))
		for i, d := range t.Devices {
			if d == nil {
				continue
			}
			dc := *d
			dc.DeviceIDs = slices.Clone(d.DeviceIDs)
			tc.Devices[i] = &dc
		}
		c.Tasks[name] = &tc
	}
	return c
}

// Copy returns a deep copy.
func (s *TaskState) Copy() *TaskState {
	if s == nil {
		return nil
	}
	c := *s
	c.Events = make([]*TaskEvent, len(s.Events))
	for i, e := range s.Events {
		if e == nil {
			continue
		}
		ec := *e
		ec.Details = maps.Clone(e.Details)
		c.Events[i] = &ec
	}
	return &c
}

// AllocListStub is the summary returned by allocation list endpoints.
type AllocListStub struct {
	ID                 string
	EvalID             string
	Name               string
	Namespace          string
	NodeID             string
	NodeName           string
	JobID              string
	JobType            string
	JobVersion         uint64
	TaskGroup          string
	AllocatedResources *AllocatedResources
	DesiredStatus      string
	DesiredDescription string
	// PreemptedByAllocation is the allocation whose placement stopped
	// this one; PreemptedAllocations are those this one's placement
	// stopped (structs/preempt.go).
	PreemptedByAllocation string
	PreemptedAllocations  []string
	ClientStatus          string
	ClientDescription     string
	TaskStates            map[string]*TaskState
	DeploymentStatus      *AllocDeploymentStatus `json:",omitempty"`
	CreateIndex           uint64
	ModifyIndex           uint64
	CreateTime            int64
	ModifyTime            int64
}

// Stub returns the allocation's list stub.
func (a *Allocation) Stub() *AllocListStub {
	s := &AllocListStub{
		ID: a.ID, EvalID: a.EvalID, Name: a.Name, Namespace: a.Namespace,
		NodeID: a.NodeID, NodeName: a.NodeName, JobID: a.JobID,
		TaskGroup: a.TaskGroup, AllocatedResources: a.AllocatedResources,
		DesiredStatus: a.DesiredStatus, DesiredDescription: a.DesiredDescription,
		ClientStatus: a.ClientStatus, ClientDescription: a.ClientDescription,
		TaskStates: a.TaskStates, CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex,
		CreateTime: a.CreateTime, ModifyTime: a.ModifyTime, DeploymentStatus: a.DeploymentStatus,
	}
	if a.Job != nil {
		s.JobType = a.Job.Type
		s.JobVersion = a.Job.Version
	}
	return s
}
