package agent

import (
	"fmt"
	"math"

	"github.com/droverhq/drover/structs"
)

// LimitsConfig is the limits block: bounds on what the HTTP API and the
// servers accept (structs.Limits). An unset setting keeps its default;
// a later config file's settings override an earlier one's one by one.
//
//	limits {
//	  http_max_body         = "8MiB"
//	  json_max_depth        = 64
//	  hcl_max_depth         = 64
//	  job_max_size          = "1MiB"
//	  job_max_count         = 10000
//	  job_max_groups        = 1000
//	  job_max_tasks         = 1000
//	  device_max_count      = 1024
//	  name_max_length       = 128
//	  task_config_max_depth = 32
//	  variable_max_size     = "64KiB"
//	}
type LimitsConfig struct {
	HTTPMaxBody        string `hcl:"http_max_body,optional"`
	JSONMaxDepth       int    `hcl:"json_max_depth,optional"`
	HCLMaxDepth        int    `hcl:"hcl_max_depth,optional"`
	JobMaxSize         string `hcl:"job_max_size,optional"`
	JobMaxCount        int    `hcl:"job_max_count,optional"`
	JobMaxGroups       int    `hcl:"job_max_groups,optional"`
	JobMaxTasks        int    `hcl:"job_max_tasks,optional"`
	DeviceMaxCount     int    `hcl:"device_max_count,optional"`
	NameMaxLength      int    `hcl:"name_max_length,optional"`
	TaskConfigMaxDepth int    `hcl:"task_config_max_depth,optional"`
	VariableMaxSize    string `hcl:"variable_max_size,optional"`
}

// mergeLimits overlays o's set limits onto c's.
func (c *Config) mergeLimits(o *LimitsConfig) {
	if o == nil {
		return
	}
	if c.Limits == nil {
		c.Limits = &LimitsConfig{}
	}
	l := c.Limits
	pickStr := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	pickInt := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	pickStr(&l.HTTPMaxBody, o.HTTPMaxBody)
	pickStr(&l.JobMaxSize, o.JobMaxSize)
	pickStr(&l.VariableMaxSize, o.VariableMaxSize)
	pickInt(&l.JSONMaxDepth, o.JSONMaxDepth)
	pickInt(&l.HCLMaxDepth, o.HCLMaxDepth)
	pickInt(&l.JobMaxCount, o.JobMaxCount)
	pickInt(&l.JobMaxGroups, o.JobMaxGroups)
	pickInt(&l.JobMaxTasks, o.JobMaxTasks)
	pickInt(&l.DeviceMaxCount, o.DeviceMaxCount)
	pickInt(&l.NameMaxLength, o.NameMaxLength)
	pickInt(&l.TaskConfigMaxDepth, o.TaskConfigMaxDepth)
}

// limits returns the structs.Limits the limits block sets, the defaults
// filling what it leaves unset.
func (c *Config) limits() (structs.Limits, error) {
	l := c.Limits
	if l == nil {
		return structs.DefaultLimits(), nil
	}
	size := func(setting, v string) (int64, error) {
		if v == "" {
			return 0, nil
		}
		n, err := structs.ParseBytes(v)
		if err != nil || n == 0 || n > math.MaxInt64 {
			return 0, fmt.Errorf("agent config: limits.%s %q: want a positive size such as \"8MiB\"", setting, v)
		}
		return int64(n), nil
	}
	body, err := size("http_max_body", l.HTTPMaxBody)
	if err != nil {
		return structs.Limits{}, err
	}
	jobSize, err := size("job_max_size", l.JobMaxSize)
	if err != nil {
		return structs.Limits{}, err
	}
	if jobSize > structs.JobMaxSizeCap {
		return structs.Limits{}, fmt.Errorf("agent config: limits.job_max_size %q over %d bytes: a job must fit one RPC request (structs.RPCMaxMessage)",
			l.JobMaxSize, structs.JobMaxSizeCap)
	}
	varSize, err := size("variable_max_size", l.VariableMaxSize)
	if err != nil {
		return structs.Limits{}, err
	}
	if varSize > 1<<20 {
		return structs.Limits{}, fmt.Errorf("agent config: limits.variable_max_size %q over 1MiB: a variable must fit one Raft entry comfortably", l.VariableMaxSize)
	}
	for setting, v := range map[string]int{
		"json_max_depth": l.JSONMaxDepth, "hcl_max_depth": l.HCLMaxDepth, "job_max_count": l.JobMaxCount,
		"job_max_groups": l.JobMaxGroups, "job_max_tasks": l.JobMaxTasks, "device_max_count": l.DeviceMaxCount,
		"name_max_length": l.NameMaxLength, "task_config_max_depth": l.TaskConfigMaxDepth,
	} {
		if v < 0 {
			return structs.Limits{}, fmt.Errorf("agent config: limits.%s %d must be positive", setting, v)
		}
	}
	if l.TaskConfigMaxDepth > structs.TaskConfigMaxDepthCap {
		return structs.Limits{}, fmt.Errorf("agent config: limits.task_config_max_depth %d over %d: deeper configs cannot cross RPC or Raft (structs.MsgpackMaxDepth)",
			l.TaskConfigMaxDepth, structs.TaskConfigMaxDepthCap)
	}
	out := structs.Limits{
		HTTPMaxBody: body, JSONMaxDepth: l.JSONMaxDepth, HCLMaxDepth: l.HCLMaxDepth,
		JobMaxSize: jobSize, JobMaxCount: l.JobMaxCount, JobMaxGroups: l.JobMaxGroups,
		JobMaxTasks: l.JobMaxTasks, DeviceMaxCount: uint64(l.DeviceMaxCount),
		NameMaxLength: l.NameMaxLength, TaskConfigMaxDepth: l.TaskConfigMaxDepth,
		VariableMaxSize: int(varSize),
	}
	return out.WithDefaults(), nil
}

// validateLimits checks the limits block.
func (c *Config) validateLimits() []error {
	if _, err := c.limits(); err != nil {
		return []error{err}
	}
	return nil
}
