package command

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/droverhq/drover/structs"
)

// specDiff lists the fields of a job's spec that differ between the
// stored job old and the submitted job, one line per field, by path:
//
//	~ TaskGroups["train"].Count: 1 => 3
//	+ TaskGroups["train"].Meta.owner: "ml"
//	- Constraints[0].RTarget: "H100"
//
// Lists of named objects (groups, tasks, devices) are keyed by name, other
// lists by position; zero values count as unset; server-owned fields
// (status, version, indexes, times) are ignored. Both jobs are compared
// canonicalized, so defaults the server fills in are no change.
func specDiff(old, job *structs.Job) []string {
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
	var lines []string
	for _, p := range paths {
		b, inBefore := before[p]
		a, inAfter := after[p]
		switch {
		case !inBefore:
			lines = append(lines, fmt.Sprintf("+ %s: %s", p, a))
		case !inAfter:
			lines = append(lines, fmt.Sprintf("- %s: %s", p, b))
		case a != b:
			lines = append(lines, fmt.Sprintf("~ %s: %s => %s", p, b, a))
		}
	}
	return lines
}

// flattenSpec returns the job's spec as path -> rendered value, for the
// fields that are set. A nil job has none.
func flattenSpec(j *structs.Job) map[string]string {
	out := map[string]string{}
	if j == nil {
		return out
	}
	c := j.Copy()
	c.Canonicalize()
	c.Status, c.StatusDescription, c.Version, c.SubmitTime = "", "", 0, 0
	c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = 0, 0, 0
	c.Stop = false
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
