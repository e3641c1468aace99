package structs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// FieldDiff is one changed field of a spec (Nomad's shape). Drover's
// diffs are flat: Name is the field's path from the job, such as
// TaskGroups["web"].Tasks["app"].Config.args.
type FieldDiff struct {
	Type        string
	Name        string
	Old, New    string
	Annotations []string
}

// ObjectDiff, TaskGroupDiff and TaskDiff are Nomad's nested diffs;
// Drover reports every change as a flat FieldDiff of the JobDiff, so
// these stay empty, but decode as Nomad's clients expect.
type ObjectDiff struct {
	Type    string
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
}

// TaskGroupDiff is Nomad's (see ObjectDiff).
type TaskGroupDiff struct {
	Type    string
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
	Tasks   []*TaskDiff
	Updates map[string]uint64
}

// TaskDiff is Nomad's (see ObjectDiff).
type TaskDiff struct {
	Type        string
	Name        string
	Fields      []*FieldDiff
	Objects     []*ObjectDiff
	Annotations []string
}

// DiffJobs returns how job differs from old (nil when new): the type and
// one FieldDiff per changed field, sorted by path.
func DiffJobs(old, job *Job) *JobDiff {
	d := &JobDiff{ID: job.ID, Type: DiffTypeNone, Fields: SpecFieldDiffs(old, job)}
	switch {
	case old == nil:
		d.Type = DiffTypeAdded
	case len(d.Fields) > 0:
		d.Type = DiffTypeEdited
	}
	return d
}

// SpecFieldDiffs lists the fields of a job's spec that differ between
// old and job, by path: lists of named objects (groups, tasks, devices)
// are keyed by name, other lists by position; zero values count as
// unset; server-owned fields (status, version, stability, indexes,
// times, stop) are ignored. Both jobs are compared canonicalized, so
// defaults the server fills in are no change.
func SpecFieldDiffs(old, job *Job) []*FieldDiff {
	before, after := flattenSpec(old), flattenSpec(job)
	paths := make([]string, 0, len(before)+len(after))
	for p := range before {
		paths = append(paths, p)
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var out []*FieldDiff
	for _, p := range paths {
		b, inBefore := before[p]
		a, inAfter := after[p]
		switch {
		case !inBefore:
			out = append(out, &FieldDiff{Type: DiffTypeAdded, Name: p, New: a})
		case !inAfter:
			out = append(out, &FieldDiff{Type: DiffTypeDeleted, Name: p, Old: b})
		case a != b:
			out = append(out, &FieldDiff{Type: DiffTypeEdited, Name: p, Old: b, New: a})
		}
	}
	return out
}

// flattenSpec returns the job's spec as path -> rendered value, for the
// fields that are set. A nil job has none.
func flattenSpec(j *Job) map[string]string {
	out := map[string]string{}
	if j == nil {
		return out
	}
	c := j.Copy()
	c.Canonicalize()
	c.Status, c.StatusDescription, c.Version, c.SubmitTime = "", "", 0, 0
	c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = 0, 0, 0
	c.Stop, c.Stable = false, false
	raw, err := json.Marshal(c)
	if err != nil {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return out
	}
	flatten("", v, out)
	return out
}

// flatten adds v's set leaves under path to out.
func flatten(path string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			key := k
			if path != "" {
				key = path + "." + k
			}
			flatten(key, e, out)
		}
	case []any:
		if leaves, ok := scalarList(x); ok {
			if len(leaves) > 0 {
				out[path] = "[" + strings.Join(leaves, ", ") + "]"
			}
			return
		}
		for i, e := range x {
			flatten(path+elementKey(i, e), e, out)
		}
	default:
		if s, ok := scalar(x); ok {
			out[path] = s
		}
	}
}

// elementKey is how a list element appears in a path: by its Name when it
// has one, else by position.
func elementKey(i int, e any) string {
	if m, ok := e.(map[string]any); ok {
		if name, ok := m["Name"].(string); ok && name != "" {
			return fmt.Sprintf("[%q]", name)
		}
	}
	return fmt.Sprintf("[%d]", i)
}

// scalarList renders a list of scalars, or reports that it holds objects.
func scalarList(list []any) ([]string, bool) {
	out := make([]string, 0, len(list))
	for _, e := range list {
		switch e.(type) {
		case map[string]any, []any:
			return nil, false
		}
		s, _ := scalarOrZero(e)
		out = append(out, s)
	}
	return out, true
}

// scalar renders a set scalar; zero values ("", 0, false, null) are unset.
func scalar(v any) (string, bool) {
	s, zero := scalarOrZero(v)
	return s, !zero
}

func scalarOrZero(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x), x == ""
	case bool:
		return strconv.FormatBool(x), !x
	case json.Number:
		f, err := x.Float64()
		return x.String(), err == nil && f == 0
	case nil:
		return "null", true
	}
	return fmt.Sprint(v), false
}
