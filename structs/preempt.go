package structs

import "fmt"

// PreemptionPriorityDelta is how much higher a job's priority must be than
// another's for its placements to preempt that job's allocations (as
// Nomad's preemption: 10).
const PreemptionPriorityDelta = 10

// EvalTriggerPreemption: an allocation of the job was preempted, so the
// job is evaluated to replace it when there is room.
const EvalTriggerPreemption = "preemption"

// TaskPreempted is the task event of a task stopped because its
// allocation was preempted: its Details carry the kill signal, the grace
// time (kill_timeout) and DROVER_PREEMPTED=1, so the task can checkpoint
// in that time.
const TaskPreempted = "Preempted"

// EnvPreempted is set to "1" in a preempted task's event details and in
// the file of that name in its allocation directory.
const EnvPreempted = "DROVER_PREEMPTED"

// IsPreemptible reports whether other jobs may preempt the job's
// allocations: unless the job says `preemptible = false`.
func (j *Job) IsPreemptible() bool { return j == nil || j.Preemptible == nil || *j.Preemptible }

// CanPreempt reports whether an allocation of job may preempt victim: the
// victim's job is preemptible, another job, and of a priority lower by at
// least PreemptionPriorityDelta.
func CanPreempt(job *Job, victim *Allocation) bool {
	v := victim.Job
	if job == nil || v == nil || !v.IsPreemptible() {
		return false
	}
	if v.Namespace == job.Namespace && v.ID == job.ID {
		return false
	}
	return job.Priority-v.Priority >= PreemptionPriorityDelta
}

// PreemptedDescription is a preempted allocation's DesiredDescription.
func PreemptedDescription(by *Allocation) string {
	prio := 0
	if by.Job != nil {
		prio = by.Job.Priority
	}
	return fmt.Sprintf("preempted by allocation %s of job %q (priority %d)", by.ID, by.JobID, prio)
}

// AppendPreemptedAlloc adds the stop of victim, preempted by the
// placement by, to the plan.
func (p *Plan) AppendPreemptedAlloc(victim, by *Allocation) {
	p.AppendStoppedAlloc(victim, PreemptedDescription(by), "")
	stops := p.NodeUpdate[victim.NodeID]
	stops[len(stops)-1].PreemptedByAllocation = by.ID
}

// Preemptions returns the allocations the plan preempts (stops with
// PreemptedByAllocation set), node by node.
func (p *Plan) Preemptions() []*Allocation {
	var out []*Allocation
	for _, stops := range p.NodeUpdate {
		for _, a := range stops {
			if a.PreemptedByAllocation != "" {
				out = append(out, a)
			}
		}
	}
	return out
}
