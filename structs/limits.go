package structs

import (
	"encoding/json"
	"fmt"
	"io"
)

// Limits bounds what the agent accepts from a request, so that no input
// can run it out of memory or stack, or reach Raft and be applied again
// on every restart. Each field is set by the agent config's limits block
// (the setting named in its comment); zero means the default.
type Limits struct {
	// HTTPMaxBody is the largest request body, in bytes
	// (limits.http_max_body, "8MiB").
	HTTPMaxBody int64
	// JSONMaxDepth is how deep objects and arrays may nest in a request
	// body (limits.json_max_depth, 64).
	JSONMaxDepth int
	// HCLMaxDepth is how deep braces, brackets, parentheses and
	// templates may nest in a job file (limits.hcl_max_depth, 64).
	HCLMaxDepth int
	// JobMaxSize is the largest job, JSON-encoded, in bytes
	// (limits.job_max_size, "1MiB").
	JobMaxSize int64
	// JobMaxCount is the largest group count (limits.job_max_count,
	// 10000).
	JobMaxCount int
	// JobMaxGroups is the most groups a job may have
	// (limits.job_max_groups, 1000).
	JobMaxGroups int
	// JobMaxTasks is the most tasks a group may have
	// (limits.job_max_tasks, 1000).
	JobMaxTasks int
	// DeviceMaxCount is the most devices one device request may ask for
	// (limits.device_max_count, 1024); a request asks for at least 1.
	DeviceMaxCount uint64
	// NameMaxLength is the longest job ID, name, group or task name,
	// namespace, region, datacenter and driver, in bytes
	// (limits.name_max_length, 128).
	NameMaxLength int
	// TaskConfigMaxDepth is how deep a task's driver config may nest
	// (limits.task_config_max_depth, 32).
	TaskConfigMaxDepth int
	// VariableMaxSize is the largest variable's items, keys and values
	// together, in bytes (Nomad's 64 KiB).
	VariableMaxSize int
}

// DefaultLimits returns the limits an agent applies when its config
// sets none.
func DefaultLimits() Limits {
	return Limits{
		HTTPMaxBody:        8 << 20,
		JSONMaxDepth:       64,
		HCLMaxDepth:        64,
		JobMaxSize:         1 << 20,
		JobMaxCount:        10000,
		JobMaxGroups:       1000,
		JobMaxTasks:        1000,
		DeviceMaxCount:     1024,
		NameMaxLength:      128,
		TaskConfigMaxDepth: 32,
		VariableMaxSize:    64 << 10,
	}
}

// WithDefaults returns l with each zero (or negative) field set to its
// default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	pick := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&l.JSONMaxDepth, d.JSONMaxDepth)
	pick(&l.HCLMaxDepth, d.HCLMaxDepth)
	pick(&l.JobMaxCount, d.JobMaxCount)
	pick(&l.JobMaxGroups, d.JobMaxGroups)
	pick(&l.JobMaxTasks, d.JobMaxTasks)
	pick(&l.NameMaxLength, d.NameMaxLength)
	pick(&l.TaskConfigMaxDepth, d.TaskConfigMaxDepth)
	pick(&l.VariableMaxSize, d.VariableMaxSize)
	if l.HTTPMaxBody <= 0 {
		l.HTTPMaxBody = d.HTTPMaxBody
	}
	if l.JobMaxSize <= 0 {
		l.JobMaxSize = d.JobMaxSize
	}
	if l.DeviceMaxCount == 0 {
		l.DeviceMaxCount = d.DeviceMaxCount
	}
	return l
}

// CheckLimits returns an error wrapping ErrInvalid for the first bound of
// l (with defaults for its zero fields) the job passes, naming the bound
// and its setting: `job "x": group "g": count 1000000000 over the limit
// 10000 (limits.job_max_count)`. Call it after CheckShape and before
// Canonicalize: a job within the limits is cheap to copy, canonicalize,
// validate and store.
func (job *Job) CheckLimits(l Limits) error {
	l = l.WithDefaults()
	over := func(what string, got any, limit any, setting string) error {
		return fmt.Errorf("job %q: %s %v over the limit %v (limits.%s): %w", clip(job.ID), what, got, limit, setting, ErrInvalid)
	}
	name := func(what, s string) error {
		if len(s) > l.NameMaxLength {
			return over(what+" length", len(s), l.NameMaxLength, "name_max_length")
		}
		return nil
	}
	for _, n := range [][2]string{{"ID", job.ID}, {"name", job.Name}, {"namespace", job.Namespace}, {"region", job.Region}, {"queue", job.Queue}} {
		if err := name(n[0], n[1]); err != nil {
			return err
		}
	}
	for _, dc := range job.Datacenters {
		if err := name("datacenter", dc); err != nil {
			return err
		}
	}
	if len(job.TaskGroups) > l.JobMaxGroups {
		return over("group number", len(job.TaskGroups), l.JobMaxGroups, "job_max_groups")
	}
	for _, tg := range job.TaskGroups {
		if err := job.checkGroupLimits(tg, l, over, name); err != nil {
			return err
		}
	}
	// Depth is bounded now, so encoding cannot recurse deeply.
	n, err := encodedSize(job)
	if err != nil {
		return fmt.Errorf("job %q: cannot encode: %v: %w", clip(job.ID), err, ErrInvalid)
	}
	if n > l.JobMaxSize {
		return over("size (bytes, encoded)", n, l.JobMaxSize, "job_max_size")
	}
	return nil
}

type overFunc func(what string, got, limit any, setting string) error

func (job *Job) checkGroupLimits(tg *TaskGroup, l Limits, over overFunc, name func(what, s string) error) error {
	if err := name("group name", tg.Name); err != nil {
		return err
	}
	gname := fmt.Sprintf("group %q", clip(tg.Name))
	if tg.Count > l.JobMaxCount {
		return over(gname+": count", tg.Count, l.JobMaxCount, "job_max_count")
	}
	if len(tg.Tasks) > l.JobMaxTasks {
		return over(gname+": task number", len(tg.Tasks), l.JobMaxTasks, "job_max_tasks")
	}
	for _, t := range tg.Tasks {
		tname := fmt.Sprintf("%s: task %q", gname, clip(t.Name))
		if err := name(gname+": task name", t.Name); err != nil {
			return err
		}
		if err := name(tname+": driver", t.Driver); err != nil {
			return err
		}
		if d := valueDepth(t.Config, l.TaskConfigMaxDepth+1); d > l.TaskConfigMaxDepth {
			return over(tname+": config depth", fmt.Sprintf("over %d", l.TaskConfigMaxDepth), l.TaskConfigMaxDepth, "task_config_max_depth")
		}
		if t.Resources == nil {
			continue
		}
		for _, d := range t.Resources.Devices {
			what := fmt.Sprintf("%s: device %q: count", tname, clip(d.Name))
			if d.Count > l.DeviceMaxCount {
				return over(what, d.Count, l.DeviceMaxCount, "device_max_count")
			}
		}
	}
	return nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// valueDepth returns how deep v (maps and slices, as JSON or msgpack
// decode them) nests, counting up to stop and no further, without
// recursion.
func valueDepth(v any, stop int) int {
	type item struct {
		v any
		d int
	}
	deepest := 0
	stack := []item{{v, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		var children []any
		switch x := it.v.(type) {
		case map[string]any:
			if x == nil {
				continue
			}
			for _, c := range x {
				children = append(children, c)
			}
		case []any:
			children = x
		case []map[string]any:
			for _, c := range x {
				children = append(children, c)
			}
		default:
			continue
		}
		d := it.d + 1
		deepest = max(deepest, d)
		if deepest >= stop {
			return deepest
		}
		for _, c := range children {
			stack = append(stack, item{c, d})
		}
	}
	return deepest
}

// encodedSize returns the length of v encoded as JSON.
func encodedSize(v any) (int64, error) {
	var c countWriter
	err := json.NewEncoder(&c).Encode(v)
	return int64(c), err
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

var _ io.Writer = (*countWriter)(nil)

// UnmarshalJSON reads a device request as Nomad's API writes it, where
// an absent Count means 1. An explicit Count of 0 is refused rather
// than taken as 1: a request asks for 1 to limits.device_max_count
// devices.
func (d *RequestedDevice) UnmarshalJSON(b []byte) error {
	type plain RequestedDevice
	var in struct {
		*plain
		Count *uint64
	}
	in.plain = (*plain)(d)
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	switch {
	case in.Count == nil:
		d.Count = 1
	case *in.Count == 0:
		return fmt.Errorf("device %q: count 0 under the minimum 1 (omit Count for 1 device)", clip(d.Name))
	default:
		d.Count = *in.Count
	}
	return nil
}

// JSONDepth returns how deep objects and arrays nest in src, counting up
// to stop and no further. It scans bytes (skipping strings) and checks
// nothing else, so it is cheap to run before a decoder that recurses.
func JSONDepth(src []byte, stop int) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range src {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > deepest {
				if deepest = depth; deepest >= stop {
					return deepest
				}
			}
		case c == '}' || c == ']':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}
