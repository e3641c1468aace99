package structs

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Scaling policy types. Drover knows Nomad's horizontal (group count)
// policy; Nomad Enterprise's vertical task policies ("vertical_cpu",
// "vertical_mem") are refused by the job file parser.
const ScalingPolicyTypeHorizontal = "horizontal"

// Scaling policy target keys (Nomad's).
const (
	ScalingTargetNamespace = "Namespace"
	ScalingTargetJob       = "Job"
	ScalingTargetGroup     = "Group"
)

// ScalingPolicyMaxDepth bounds how deep a policy's contents nest. The
// contents are for an external autoscaler; Drover stores them as given.
const ScalingPolicyMaxDepth = 16

// ScalingPolicy is a group's `scaling` block: the bounds its count must
// stay within (checked at submit and by Job.Scale) and a policy for an
// external autoscaler, stored as given. The shape is Nomad's
// api.ScalingPolicy. ID, Namespace and Target are derived from the job
// and group (Job.Canonicalize), so the ID is stable across versions;
// the indexes are the job's, filled when the policy is read.
type ScalingPolicy struct {
	ID          string
	Namespace   string
	Type        string
	Target      map[string]string
	Min         *int64
	Max         *int64
	Policy      map[string]any
	Enabled     *bool
	CreateIndex uint64
	ModifyIndex uint64
}

// ScalingPolicyListStub is a policy in a list (Nomad's shape).
type ScalingPolicyListStub struct {
	ID          string
	Enabled     bool
	Type        string
	Target      map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// ScalingPolicyID derives the ID of the horizontal policy of a job's
// group: a UUID-shaped hash of the namespace, job and group, the same
// for every version of the job.
func ScalingPolicyID(namespace, jobID, group string) string {
	sum := sha256.Sum256([]byte("scaling\x00" + namespace + "\x00" + jobID + "\x00" + group))
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

// canonicalize fills a group policy's defaults (enabled, min = the
// group's count, horizontal) and its derived fields.
func (p *ScalingPolicy) canonicalize(namespace, jobID string, tg *TaskGroup) {
	if p == nil {
		return
	}
	if p.Enabled == nil {
		p.Enabled = new(true)
	}
	if p.Min == nil {
		p.Min = new(int64(tg.Count))
	}
	if p.Type == "" {
		p.Type = ScalingPolicyTypeHorizontal
	}
	p.ID = ScalingPolicyID(namespace, jobID, tg.Name)
	p.Namespace = namespace
	p.Target = map[string]string{ScalingTargetNamespace: namespace, ScalingTargetJob: jobID, ScalingTargetGroup: tg.Name}
	p.CreateIndex, p.ModifyIndex = 0, 0
}

// validate checks a canonicalized group policy against the group's count.
func (p *ScalingPolicy) validate(count int) error {
	if p == nil {
		return nil
	}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if p.Type != ScalingPolicyTypeHorizontal {
		add("scaling: type %q: a group's policy is %q", p.Type, ScalingPolicyTypeHorizontal)
	}
	switch {
	case p.Max == nil:
		add("scaling: max is required")
	case *p.Max < 0:
		add("scaling: max %d must not be negative", *p.Max)
	case p.Min != nil && *p.Max < *p.Min:
		add("scaling: max %d must not be less than min %d (min defaults to the group's count)", *p.Max, *p.Min)
	}
	if p.Min != nil && *p.Min < 0 {
		add("scaling: min %d must not be negative", *p.Min)
	}
	if err := p.CheckCount(int64(count)); err != nil && len(errs) == 0 {
		add("scaling: count %d is outside the policy's bounds [%d, %d]", count, *p.Min, *p.Max)
	}
	if d := valueDepth(p.Policy, ScalingPolicyMaxDepth+1); d > ScalingPolicyMaxDepth {
		add("scaling: policy nests deeper than %d levels", ScalingPolicyMaxDepth)
	}
	return errors.Join(errs...)
}

// CheckCount returns an error wrapping ErrInvalid when count is outside
// [Min, Max] (Nomad's message, with the bounds); a nil policy, or one
// not canonicalized, allows any count.
func (p *ScalingPolicy) CheckCount(count int64) error {
	if p == nil || p.Min == nil || p.Max == nil {
		return nil
	}
	bounds := fmt.Sprintf("the group's scaling bounds are [%d, %d]", *p.Min, *p.Max)
	switch {
	case count < *p.Min:
		return KindErrorf(ErrInvalid, "group count was less than scaling policy minimum: %d < %d (%s)", count, *p.Min, bounds)
	case count > *p.Max:
		return KindErrorf(ErrInvalid, "group count was greater than scaling policy maximum: %d > %d (%s)", count, *p.Max, bounds)
	}
	return nil
}

// Stub returns the policy's list stub.
func (p *ScalingPolicy) Stub() *ScalingPolicyListStub {
	return &ScalingPolicyListStub{
		ID: p.ID, Enabled: p.Enabled == nil || *p.Enabled, Type: p.Type,
		Target: maps.Clone(p.Target), CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex,
	}
}

// Copy returns a deep copy.
func (p *ScalingPolicy) Copy() *ScalingPolicy {
	if p == nil {
		return nil
	}
	c := *p
	c.Target = maps.Clone(p.Target)
	if p.Min != nil {
		c.Min = new(*p.Min)
	}
	if p.Max != nil {
		c.Max = new(*p.Max)
	}
	if p.Enabled != nil {
		c.Enabled = new(*p.Enabled)
	}
	if p.Policy != nil {
		c.Policy = copyValue(p.Policy).(map[string]any)
	}
	return &c
}

// ScalingPolicies returns copies of the job's group policies, with the
// job's indexes, in group order.
func (j *Job) ScalingPolicies() []*ScalingPolicy {
	var out []*ScalingPolicy
	for _, tg := range j.TaskGroups {
		if tg.Scaling == nil {
			continue
		}
		p := tg.Scaling.Copy()
		p.ID, p.Namespace = ScalingPolicyID(j.Namespace, j.ID, tg.Name), j.Namespace
		p.Target = map[string]string{ScalingTargetNamespace: j.Namespace, ScalingTargetJob: j.ID, ScalingTargetGroup: tg.Name}
		p.CreateIndex, p.ModifyIndex = j.CreateIndex, j.JobModifyIndex
		out = append(out, p)
	}
	return out
}

// copyValue deep-copies decoded JSON or HCL values (maps and lists).
func copyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyValue(e)
		}
		return out
	case []any:
		out := slices.Clone(x)
		for i, e := range out {
			out[i] = copyValue(e)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, e := range x {
			out[i], _ = copyValue(e).(map[string]any)
		}
		return out
	}
	return v
}

// RPC methods of the scaling policy reads.
const (
	RPCScalingListPolicies = "Scaling.ListPolicies"
	RPCScalingGetPolicy    = "Scaling.GetPolicy"
)

// ScalingPolicyListRequest lists the policies of Namespace ("*" for
// all), of the job JobID when set, of type Type when set.
type ScalingPolicyListRequest struct {
	JobID string
	Type  string
	QueryOptions
}

// ScalingPolicyListResponse lists policies, sorted by job then group.
type ScalingPolicyListResponse struct {
	Policies []*ScalingPolicyListStub
	QueryMeta
}

// ScalingPolicySpecificRequest names one policy by ID.
type ScalingPolicySpecificRequest struct {
	ID string
	QueryOptions
}

// SingleScalingPolicyResponse is one policy.
type SingleScalingPolicyResponse struct {
	Policy *ScalingPolicy
	QueryMeta
}
