package jobspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// jobWrapper is the register request shape {"Job": {...}}.
type jobWrapper = JobRegisterBody

// parseJSON decodes a job in Nomad's API JSON shape, bare or wrapped in
// {"Job": ...}. Fields Drover does not know are errors unless they hold
// null or an empty value, so that Nomad's own output (full of nulls) is
// accepted. Server-owned fields (status, version, indexes) are cleared.
func parseJSON(filename string, src []byte) (*structs.Job, hcl.Pos, error) {
	job := &structs.Job{}
	wrapper := &jobWrapper{}
	var target any = job
	if isWrappedJSON(src) {
		target = wrapper
	}
	chk := &jsonChecker{filename: filename, src: src}
	if err := chk.check(target); err != nil {
		return nil, hcl.Pos{}, err
	}
	if err := json.Unmarshal(src, target); err != nil {
		return nil, hcl.Pos{}, chk.decodeError(err)
	}
	pos := chk.pos(chk.jobOffset)
	if target == wrapper {
		if job = wrapper.Job; job == nil {
			return nil, pos, Errors{chk.errorAt(chk.jobOffset, "Missing job", `The "Job" field must hold a job object.`)}
		}
	}
	if err := chk.checkGroupCopies(job); err != nil {
		return nil, pos, err
	}
	if err := checkNoNulls(job); err != nil {
		return nil, pos, Errors{chk.errorAt(chk.jobOffset, "Invalid job", err.Error())}
	}
	applyJSONDefaults(src, target == wrapper, job)
	job.Status, job.StatusDescription = "", ""
	job.Version, job.SubmitTime = 0, 0
	job.CreateIndex, job.ModifyIndex, job.JobModifyIndex = 0, 0, 0
	return job, pos, nil
}

// isWrappedJSON reports whether src is an object with a "Job" key.
func isWrappedJSON(src []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(src, &top) != nil {
		return false
	}
	for k := range top {
		if strings.EqualFold(k, "Job") {
			return true
		}
	}
	return false
}

// checkNoNulls refuses null entries in the job's lists, which the rest of
// Drover assumes are never nil.
func checkNoNulls(j *structs.Job) error {
	var errs []error
	nulls := func(what string, n int) {
		if n > 0 {
			errs = append(errs, fmt.Errorf("%s must not contain null", what))
		}
	}
	nulls("Constraints", countNil(j.Constraints))
	nulls("Affinities", countNil(j.Affinities))
	nulls("TaskGroups", countNil(j.TaskGroups))
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		nulls("TaskGroups.Constraints", countNil(tg.Constraints))
		nulls("TaskGroups.Affinities", countNil(tg.Affinities))
		nulls("TaskGroups.Tasks", countNil(tg.Tasks))
		for _, t := range tg.Tasks {
			if t == nil {
				continue
			}
			nulls("Tasks.Constraints", countNil(t.Constraints))
			nulls("Tasks.Affinities", countNil(t.Affinities))
			if t.Resources == nil {
				continue
			}
			nulls("Resources.Devices", countNil(t.Resources.Devices))
			for _, dev := range t.Resources.Devices {
				if dev != nil {
					nulls("Devices.Constraints", countNil(dev.Constraints))
					nulls("Devices.Affinities", countNil(dev.Affinities))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func countNil[T any](list []*T) int {
	n := 0
	for _, item := range list {
		if item == nil {
			n++
		}
	}
	return n
}

// normalizeJSON turns whole float64 numbers in decoded driver config into
// int, as the HCL decoder produces them.
func normalizeJSON(m map[string]any) map[string]any {
	for k, v := range m {
		m[k] = normalizeJSONValue(v)
	}
	return m
}

func normalizeJSONValue(v any) any {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && x >= math.MinInt64 && x < math.MaxInt64 {
			return int(x)
		}
	case []any:
		for i := range x {
			x[i] = normalizeJSONValue(x[i])
		}
	case map[string]any:
		return normalizeJSON(x)
	}
	return v
}

// Shadow types see which defaults a JSON job left out (a group count or an
// affinity weight absent, as opposed to 0).
type (
	shadowAffinity struct{ Weight *json.RawMessage }
	shadowDevice   struct{ Affinities []shadowAffinity }
	shadowTask     struct {
		Affinities []shadowAffinity
		Resources  *struct{ Devices []shadowDevice }
	}
	shadowGroup struct {
		Count      *json.RawMessage
		Affinities []shadowAffinity
		Spreads    []shadowSpread
		Tasks      []shadowTask
	}
	shadowJob struct {
		Affinities []shadowAffinity
		Spreads    []shadowSpread
		TaskGroups []shadowGroup
	}
)

// applyJSONDefaults sets what the HCL decoder defaults too (count 1,
// affinity weight 50, operator "=") and makes whole numbers in driver
// config int.
func applyJSONDefaults(src []byte, wrapped bool, j *structs.Job) {
	var sj shadowJob
	if wrapped {
		var w struct{ Job shadowJob }
		_ = json.Unmarshal(src, &w) // the real decode succeeded; this one sees only presence
		sj = w.Job
	} else {
		_ = json.Unmarshal(src, &sj)
	}
	defaultOperands(j.Constraints, j.Affinities, sj.Affinities)
	defaultSpreadWeights(j.Spreads, sj.Spreads)
	for i, tg := range j.TaskGroups {
		sg := at(sj.TaskGroups, i)
		if sg.Count == nil {
			tg.Count = 1
			if tg.Scaling != nil && tg.Scaling.Min != nil && *tg.Scaling.Min >= 0 && *tg.Scaling.Min <= math.MaxInt32 {
				tg.Count = int(*tg.Scaling.Min) // as Nomad's api.TaskGroup.Canonicalize
			}
		}
		defaultOperands(tg.Constraints, tg.Affinities, sg.Affinities)
		defaultSpreadWeights(tg.Spreads, sg.Spreads)
		for k, t := range tg.Tasks {
			st := at(sg.Tasks, k)
			defaultOperands(t.Constraints, t.Affinities, st.Affinities)
			t.Config = normalizeJSON(t.Config)
			if t.Resources == nil {
				continue
			}
			var sdevs []shadowDevice
			if st.Resources != nil {
				sdevs = st.Resources.Devices
			}
			for m, dev := range t.Resources.Devices {
				defaultOperands(dev.Constraints, dev.Affinities, at(sdevs, m).Affinities)
			}
		}
	}
}

func at[T any](list []T, i int) T {
	var zero T
	if i < len(list) {
		return list[i]
	}
	return zero
}

func defaultOperands(cs []*structs.Constraint, as []*structs.Affinity, shadow []shadowAffinity) {
	for _, c := range cs {
		if c.Operand == "" {
			c.Operand = "="
		}
	}
	for i, a := range as {
		if a.Operand == "" {
			a.Operand = "="
		}
		if at(shadow, i).Weight == nil {
			a.Weight = defaultAffinityWeight
		}
	}
}
