package structs

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Job types.
const (
	JobTypeService  = "service"
	JobTypeBatch    = "batch"
	JobTypeSystem   = "system"
	JobTypeSysBatch = "sysbatch"
)

// Job statuses, derived from the job's allocations and evaluations.
const (
	JobStatusPending = "pending"
	JobStatusRunning = "running"
	JobStatusDead    = "dead"
)

// Job priority bounds and default.
const (
	JobMinPriority     = 1
	JobDefaultPriority = 50
	JobMaxPriority     = 100
)

// DefaultNamespace is the namespace of jobs that name none.
const DefaultNamespace = "default"

// Restart modes.
const (
	RestartModeFail  = "fail"
	RestartModeDelay = "delay"
)

// Job is the unit a user submits: one or more task groups that are
// scheduled together under one ID. Field names and JSON shapes follow
// Nomad's /v1 API so that Nomad clients can read and write them.
type Job struct {
	Region    string
	Namespace string
	// Queue is the fair-share queue the job's work waits in ("" is
	// DefaultQueue; structs/queue.go).
	Queue       string
	ID          string
	Name        string
	Type        string
	Priority    int
	Datacenters []string
	Constraints []*Constraint
	Affinities  []*Affinity
	Spreads     []*Spread // for every group, with its own (structs/spread.go)
	TaskGroups  []*TaskGroup
	Meta        map[string]string
	// Update is the rolling update strategy its groups inherit (a service
	// job without one gets DefaultUpdateStrategy; structs/update.go).
	Update *UpdateStrategy

	// MaxRunTime, when set, bounds how long each allocation's tasks run:
	// the client kills them past it (the allocation fails). A job that
	// declares one may backfill GPUs a waiting gang has reserved, when it
	// will end before the gang can start (Drover's; structs/reservation.go).
	MaxRunTime time.Duration

	// Preemptible false keeps higher-priority jobs from preempting the
	// job's allocations (Drover's; nil means true, see structs/preempt.go).
	Preemptible *bool

	// AllAtOnce, UI and Migrate are Nomad's (structs/jobmisc.go).
	AllAtOnce bool             `json:",omitempty"`
	UI        *JobUIConfig     `json:",omitempty"`
	Migrate   *MigrateStrategy `json:",omitempty"`

	// Stop is set when the job is deregistered without purge: it stays in
	// state but all its allocations are stopped.
	Stop bool

	// Periodic and parameterized jobs (structs/periodic.go).
	Periodic         *PeriodicConfig         `json:",omitempty"`
	ParameterizedJob *ParameterizedJobConfig `json:",omitempty"`
	ParentID         string                  `json:",omitempty"`
	Dispatched       bool                    `json:",omitempty"`
	Payload          []byte                  `json:",omitempty"`

	Status            string
	StatusDescription string
	Version           uint64
	// Stable marks a version that a deployment completed or an operator
	// marked (structs/job_version.go).
	Stable     bool
	SubmitTime int64

	CreateIndex    uint64
	ModifyIndex    uint64
	JobModifyIndex uint64
}

// TaskGroup is a set of tasks placed together on one node, Count times.
type TaskGroup struct {
	Name          string
	Count         int
	Constraints   []*Constraint
	Affinities    []*Affinity
	Spreads       []*Spread // with the job's (structs/spread.go)
	RestartPolicy *RestartPolicy
	// ReschedulePolicy says how failed allocations are replaced (nil:
	// the job type's default, see structs/reschedule.go).
	ReschedulePolicy *ReschedulePolicy
	// Update says how a job update replaces the group's allocations (the
	// job's when the group sets none; structs/update.go).
	Update *UpdateStrategy
	// Gang makes the group's placement all or nothing (structs/gang.go).
	Gang *Gang
	// Distributed ranks the group's allocations for a training job
	// (structs/distributed.go).
	Distributed *DistributedConfig `json:",omitempty"`
	// Checkpoint gives each task a directory that outlives its
	// allocation (structs/checkpoint.go).
	Checkpoint *CheckpointConfig `json:",omitempty"`
	// Networks are the group's ports (structs/network.go).
	Networks []*NetworkResource `json:",omitempty"`
	// Services are registered in Drover's service registry while the
	// group's allocations run (structs/service.go).
	Services []*Service `json:",omitempty"`
	Tasks    []*Task
	Meta     map[string]string
	// Volumes are the host volumes the group mounts (structs/volumes.go).
	Volumes map[string]*VolumeRequest `json:",omitempty"`
	// EphemeralDisk is the group's alloc dir disk (structs/ephemeral_disk.go).
	EphemeralDisk *EphemeralDisk `json:",omitempty"`
	// MaxClientDisconnect and Disconnect: structs/disconnect.go.
	MaxClientDisconnect *time.Duration      `json:",omitempty"`
	Disconnect          *DisconnectStrategy `json:",omitempty"`
	// Scaling, Migrate, ShutdownDelay and PreventRescheduleOnLost are
	// Nomad's (structs/scaling.go, structs/jobmisc.go).
	Scaling                 *ScalingPolicy   `json:",omitempty"`
	Migrate                 *MigrateStrategy `json:",omitempty"`
	ShutdownDelay           time.Duration    `json:",omitempty"`
	PreventRescheduleOnLost bool             `json:",omitempty"`
}

// Task is one process (or container) run by a driver.
type Task struct {
	Name        string
	Driver      string
	Config      map[string]any
	Env         map[string]string
	Meta        map[string]string
	Resources   *Resources
	Constraints []*Constraint
	Affinities  []*Affinity
	KillTimeout time.Duration
	KillSignal  string
	// User is the user the task runs as ("alice", or a numeric "1000";
	// docker also takes "user:group"); "" leaves it to the driver (exec
	// and raw_exec: nobody; docker: the image's). Clients check it
	// against their user.denylist.
	User string
	// LogConfig bounds the task's log files (nil: the defaults, see
	// structs/logs.go).
	LogConfig *LogConfig
	// Services are the task's (structs/service.go).
	Services []*Service `json:",omitempty"`
	// Lifecycle and Leader order the group's tasks (structs/lifecycle.go).
	Lifecycle *TaskLifecycleConfig `json:",omitempty"`
	Leader    bool                 `json:",omitempty"`
	// VolumeMounts mount the group's volumes (structs/volumes.go).
	VolumeMounts []*VolumeMount `json:",omitempty"`
	// ShutdownDelay and Kind are Nomad's (structs/jobmisc.go).
	ShutdownDelay time.Duration `json:",omitempty"`
	Kind          string        `json:",omitempty"`
	// DispatchPayload writes a dispatched job's payload into the task's
	// local/ directory (structs/periodic.go).
	DispatchPayload *DispatchPayloadConfig `json:",omitempty"`
	// Templates and Artifacts prepare the task directory before each
	// start (structs/template.go).
	Templates []*Template     `json:",omitempty"`
	Artifacts []*TaskArtifact `json:",omitempty"`
}

// Resources is what a task asks for.
type Resources struct {
	CPU      int // MHz
	MemoryMB int
	Devices  []*RequestedDevice
	// Networks in a task's resources is Nomad's older place for ports;
	// they are held by the allocation as the group's are.
	Networks []*NetworkResource `json:",omitempty"`
	// MemoryMaxMB lets the task use memory past MemoryMB up to it when
	// the node has it (Nomad's oversubscription); 0: no more than
	// MemoryMB. DiskMB is Nomad's deprecated disk ask, ignored.
	MemoryMaxMB int `json:",omitempty"`
	DiskMB      int `json:",omitempty"`
}

// RequestedDevice asks for Count devices matching Name
// ("gpu", "nvidia/gpu" or "nvidia/gpu/<model>") and the constraints.
type RequestedDevice struct {
	Name        string
	Count       uint64
	Constraints []*Constraint
	Affinities  []*Affinity

	// Drover extensions.
	// Topology is "", "any", "nvlink" or "numa": the set of instances must
	// share an NVLink domain or a NUMA node.
	Topology string
	// MemoryMB and Compute (percent of SMs) ask for a slice of one GPU.
	MemoryMB uint64
	Compute  int
}

// DeviceRequest is the name the design uses for a device ask.
type DeviceRequest = RequestedDevice

// Constraint operators. The operand names follow Nomad.
const (
	ConstraintDistinctHosts    = "distinct_hosts"
	ConstraintDistinctProperty = "distinct_property"
	ConstraintRegex            = "regexp"
	ConstraintVersion          = "version"
	ConstraintSemver           = "semver"
	ConstraintSetContains      = "set_contains"
	ConstraintSetContainsAll   = "set_contains_all"
	ConstraintSetContainsAny   = "set_contains_any"
	ConstraintAttributeIsSet   = "is_set"
	ConstraintAttributeNotSet  = "is_not_set"
)

// Constraint filters nodes (or device groups) on an attribute. LTarget and
// RTarget keep `${...}` interpolations as written.
type Constraint struct {
	LTarget string
	RTarget string
	Operand string
}

func (c *Constraint) String() string {
	return strings.TrimSpace(fmt.Sprintf("%s %s %s", c.LTarget, c.Operand, c.RTarget))
}

// Affinity prefers (positive Weight) or avoids (negative) matching nodes.
type Affinity struct {
	LTarget string
	RTarget string
	Operand string
	Weight  int8
}

func (a *Affinity) String() string {
	return fmt.Sprintf("%s %s %s (weight %d)", a.LTarget, a.Operand, a.RTarget, a.Weight)
}

// RestartPolicy says how a task runner restarts a failed task in place.
type RestartPolicy struct {
	Attempts int
	Interval time.Duration
	Delay    time.Duration
	Mode     string
	// RenderTemplates re-renders templates on restart (Nomad's; stored).
	RenderTemplates bool `json:",omitempty"`
}

// DefaultRestartPolicy returns Nomad's default restart policy for a job type.
func DefaultRestartPolicy(jobType string) *RestartPolicy {
	if jobType == JobTypeBatch || jobType == JobTypeSysBatch {
		return &RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: RestartModeFail}
	}
	return &RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: RestartModeFail}
}

// Canonicalize fills defaults in place: namespace, name, type, priority,
// restart policies, update strategies (a service job's default, which
// groups without one inherit), kill timeouts, task resources and device
// counts. A group's Count is left alone (0 is a legal scale-to-zero; the jobspec
// parser defaults an absent count to 1).
func (j *Job) Canonicalize() {
	if j.Namespace == "" {
		j.Namespace = DefaultNamespace
	}
	if j.Name == "" {
		j.Name = j.ID
	}
	if j.Type == "" {
		j.Type = JobTypeService
	}
	if j.Priority == 0 {
		j.Priority = JobDefaultPriority
	}
	if j.Region == "" {
		j.Region = "global"
	}
	if len(j.Datacenters) == 0 {
		j.Datacenters = slices.Clone(DefaultDatacenters)
	}
	j.Periodic.Canonicalize()
	j.ParameterizedJob.Canonicalize()
	if j.Update == nil && j.Type == JobTypeService {
		j.Update = DefaultUpdateStrategy()
	}
	j.Update.Canonicalize()
	j.canonicalizeMisc()
	for _, tg := range j.TaskGroups {
		if tg.Update == nil {
			tg.Update = j.Update.Copy()
		}
		tg.Update.Canonicalize()
		tg.Gang.Canonicalize()
		tg.canonicalizeRendezvous()
		tg.canonicalizeServices(j.Name)
		tg.Disconnect.Canonicalize()
		if tg.RestartPolicy == nil {
			tg.RestartPolicy = DefaultRestartPolicy(j.Type)
		}
		if tg.ReschedulePolicy != nil {
			tg.ReschedulePolicy.Canonicalize(j.Type)
		}
		for _, t := range tg.Tasks {
			if t.KillTimeout == 0 {
				t.KillTimeout = 5 * time.Second
			}
			if t.Resources == nil {
				t.Resources = &Resources{}
			}
			if t.Resources.CPU == 0 {
				t.Resources.CPU = 100
			}
			if t.Resources.MemoryMB == 0 {
				t.Resources.MemoryMB = 300
			}
			for _, d := range t.Resources.Devices {
				if d.Count == 0 {
					d.Count = 1
				}
			}
			t.canonicalizeTaskFiles() // template.go
		}
	}
}

var validIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.\-]*$`)

// Validate checks a canonicalized job and returns every problem found,
// joined, or nil.
func (j *Job) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch {
	case j.ID == "":
		add("job: missing ID")
	case j.ParentID != "" && validChildID(j.ID):
	case !validIDRe.MatchString(j.ID) || len(j.ID) > 128:
		add("job %q: ID must be 1-128 letters, digits, '_', '-' or '.'", j.ID)
	}
	if err := j.validatePeriodic(); err != nil {
		errs = append(errs, err)
	}
	switch j.Type {
	case JobTypeService, JobTypeBatch, JobTypeSystem, JobTypeSysBatch:
	default:
		add("job %q: type %q is not one of service, batch, system, sysbatch", j.ID, j.Type)
	}
	switch {
	case j.MaxRunTime < 0:
		add("job %q: max_run_time %v must not be negative", j.ID, j.MaxRunTime)
	case j.MaxRunTime > 0 && j.Type != JobTypeBatch && j.Type != JobTypeSysBatch:
		add("job %q: max_run_time is for batch jobs (a %s job runs until stopped)", j.ID, j.Type)
	}
	if j.Priority < JobMinPriority || j.Priority > JobMaxPriority {
		add("job %q: priority %d must be between %d and %d", j.ID, j.Priority, JobMinPriority, JobMaxPriority)
	}
	if len(j.Datacenters) == 0 {
		add("job %q: missing datacenters", j.ID)
	}
	if len(j.TaskGroups) == 0 {
		add("job %q: missing task group", j.ID)
	}
	for _, c := range j.Constraints {
		if err := c.Validate(); err != nil {
			add("job %q: %w", j.ID, err)
		}
	}
	for _, a := range j.Affinities {
		if err := a.Validate(); err != nil {
			add("job %q: %w", j.ID, err)
		}
	}
	if err := validateSpreads(j.Spreads); err != nil {
		add("job %q: %w", j.ID, err)
	}
	if err := j.Update.Validate(); err != nil {
		add("job %q: %w", j.ID, err)
	}
	if err := j.validateMisc(); err != nil {
		errs = append(errs, err)
	}
	seen := map[string]bool{}
	for _, tg := range j.TaskGroups {
		if seen[tg.Name] {
			add("job %q: duplicate group %q", j.ID, tg.Name)
		}
		seen[tg.Name] = true
		if err := tg.Validate(); err != nil {
			add("job %q: %w", j.ID, err)
		}
		if (j.Type == JobTypeSystem || j.Type == JobTypeSysBatch) && tg.Count > 1 {
			add("job %q: group %q: count %d cannot exceed 1 for a %s job (one allocation per node)", j.ID, tg.Name, tg.Count, j.Type)
		}
		if (j.Type == JobTypeSystem || j.Type == JobTypeSysBatch) && tg.Rendezvous() {
			add("job %q: group %q: gang and distributed blocks are not supported in a %s job (its allocations are one per node, all rank 0)", j.ID, tg.Name, j.Type)
		}
	}
	return errors.Join(errs...)
}

// Validate checks one task group.
func (tg *TaskGroup) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if tg.Name == "" {
		add("group: missing name")
	}
	if tg.Count < 0 {
		add("group %q: count %d must not be negative", tg.Name, tg.Count)
	}
	if len(tg.Tasks) == 0 {
		add("group %q: missing task", tg.Name)
	}
	if rp := tg.RestartPolicy; rp != nil {
		if rp.Mode != RestartModeFail && rp.Mode != RestartModeDelay {
			add("group %q: restart mode %q is not one of fail, delay", tg.Name, rp.Mode)
		}
		if rp.Attempts < 0 {
			add("group %q: restart attempts %d must not be negative", tg.Name, rp.Attempts)
		}
		if rp.Delay < 0 || rp.Interval < 0 {
			add("group %q: restart delay and interval must not be negative", tg.Name)
		}
	}
	if rp := tg.ReschedulePolicy; rp != nil {
		if err := rp.Validate(); err != nil {
			add("group %q: %w", tg.Name, err)
		}
	}
	if err := tg.Update.Validate(); err != nil {
		add("group %q: %w", tg.Name, err)
	}
	if err := tg.Gang.Validate(tg.Count); err != nil {
		add("group %q: %w", tg.Name, err)
	}
	if err := tg.Distributed.Validate(); err != nil {
		add("group %q: %w", tg.Name, err)
	}
	if err := tg.Checkpoint.Validate(); err != nil {
		add("group %q: %w", tg.Name, err)
	}
	for _, c := range tg.Constraints {
		if err := c.Validate(); err != nil {
			add("group %q: %w", tg.Name, err)
		}
	}
	for _, a := range tg.Affinities {
		if err := a.Validate(); err != nil {
			add("group %q: %w", tg.Name, err)
		}
	}
	if err := validateSpreads(tg.Spreads); err != nil {
		add("group %q: %w", tg.Name, err)
	}
	if err := tg.validateNetworks(); err != nil {
		add("group %q: %w", tg.Name, err)
	}
	if err := tg.validateServices(); err != nil {
		add("group %q: %w", tg.Name, err)
	}
	seen := map[string]bool{}
	for _, t := range tg.Tasks {
		if seen[t.Name] {
			add("group %q: duplicate task %q", tg.Name, t.Name)
		}
		seen[t.Name] = true
		if err := t.Validate(); err != nil {
			add("group %q: %w", tg.Name, err)
		}
	}
	for _, err := range []error{tg.validateLifecycle(), tg.validateVolumes(), tg.EphemeralDisk.Validate(), tg.validateDisconnect()} {
		if err != nil {
			add("group %q: %w", tg.Name, err)
		}
	}
	return errors.Join(errs...)
}

// ReservedTaskName is the allocation directory's shared dir, which no
// task dir may be.
const ReservedTaskName = "alloc"

// CheckTaskName checks that a task name is usable as the name of the
// task's directory inside its allocation's: one path element, not "."
// or "..", not the shared "alloc" dir, at most 128 bytes, no NUL.
func CheckTaskName(name string) error {
	switch {
	case name == "":
		return errors.New("missing name")
	case len(name) > 128:
		return fmt.Errorf("task name of %d bytes: at most 128", len(name))
	case name == "." || name == "..", strings.ContainsAny(name, "/\\\x00"):
		return fmt.Errorf("task name %q: it names the task's directory, so no '/', '\\', NUL, \".\" or \"..\"", name)
	case name == ReservedTaskName:
		return fmt.Errorf("task name %q is reserved (the allocation's shared directory)", name)
	}
	return nil
}

// Validate checks one task.
func (t *Task) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if err := CheckTaskName(t.Name); err != nil {
		add("task: %w", err)
	}
	if t.Driver == "" {
		add("task %q: missing driver", t.Name)
	}
	if t.KillTimeout < 0 {
		add("task %q: kill_timeout must not be negative", t.Name)
	}
	if t.User != "" && strings.ContainsAny(t.User, "/\x00 \t\n") {
		add("task %q: user %q is not a user name or ID", t.Name, t.User)
	}
	for _, c := range t.Constraints {
		if err := c.Validate(); err != nil {
			add("task %q: %w", t.Name, err)
		}
	}
	for _, a := range t.Affinities {
		if err := a.Validate(); err != nil {
			add("task %q: %w", t.Name, err)
		}
	}
	if err := t.Lifecycle.Validate(); err != nil {
		add("task %q: %w", t.Name, err)
	}
	if err := t.validateTaskFiles(); err != nil {
		errs = append(errs, err)
	}
	if r := t.Resources; r != nil {
		if r.CPU < 0 || r.MemoryMB < 0 {
			add("task %q: cpu and memory must not be negative", t.Name)
		}
		for _, d := range r.Devices {
			if err := d.Validate(); err != nil {
				add("task %q: %w", t.Name, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Validate checks a device request.
func (d *RequestedDevice) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if _, _, _, err := ParseDeviceName(d.Name); err != nil {
		add("device: %w", err)
	}
	switch d.Topology {
	case "", "any", "nvlink", "numa":
	default:
		add("device %q: topology %q is not one of nvlink, numa, any", d.Name, d.Topology)
	}
	if d.Compute < 0 || d.Compute > 100 {
		add("device %q: compute %d must be a percentage between 1 and 100", d.Name, d.Compute)
	}
	if d.IsFractional() && d.Count != 1 {
		add("device %q: a fractional request (memory or compute) must have count = 1, not %d", d.Name, d.Count)
	}
	for _, c := range d.Constraints {
		if err := c.Validate(); err != nil {
			add("device %q: %w", d.Name, err)
		}
	}
	for _, a := range d.Affinities {
		if err := a.Validate(); err != nil {
			add("device %q: %w", d.Name, err)
		}
	}
	return errors.Join(errs...)
}

// IsFractional reports whether the request asks for a slice of one GPU.
func (d *RequestedDevice) IsFractional() bool { return d.MemoryMB > 0 || d.Compute > 0 }

var knownOperands = []string{
	"=", "==", "is", "!=", "not", ">", ">=", "<", "<=",
	ConstraintDistinctHosts, ConstraintDistinctProperty, ConstraintRegex,
	ConstraintVersion, ConstraintSemver, ConstraintSetContains,
	ConstraintSetContainsAll, ConstraintSetContainsAny,
	ConstraintAttributeIsSet, ConstraintAttributeNotSet,
}

// Validate checks the operator and that the operands it needs are present.
func (c *Constraint) Validate() error {
	if !slices.Contains(knownOperands, c.Operand) {
		return fmt.Errorf("constraint %q: unknown operator %q", c.String(), c.Operand)
	}
	switch c.Operand {
	case ConstraintDistinctHosts:
		return nil
	case ConstraintAttributeIsSet, ConstraintAttributeNotSet, ConstraintDistinctProperty:
		if c.LTarget == "" {
			return fmt.Errorf("constraint %q: missing attribute", c.String())
		}
		if n, err := strconv.Atoi(c.RTarget); c.Operand == ConstraintDistinctProperty && c.RTarget != "" && (err != nil || n < 1) {
			return fmt.Errorf("constraint %q: distinct_property value %q must be a count of 1 or more", c.String(), c.RTarget)
		}
		return nil
	case ConstraintRegex:
		if _, err := regexp.Compile(c.RTarget); err != nil {
			return fmt.Errorf("constraint %q: bad regexp: %w", c.String(), err)
		}
	}
	if c.LTarget == "" {
		return fmt.Errorf("constraint %q: missing attribute", c.String())
	}
	return nil
}

// Validate checks an affinity.
func (a *Affinity) Validate() error {
	c := Constraint{LTarget: a.LTarget, RTarget: a.RTarget, Operand: a.Operand}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("affinity: %w", err)
	}
	if a.Weight == 0 || a.Weight < -100 || a.Weight > 100 {
		return fmt.Errorf("affinity %q: weight %d must be between -100 and 100 and not 0", a.String(), a.Weight)
	}
	return nil
}

// ParseDeviceName splits a device request name into vendor, type and model:
// "gpu" -> ("", "gpu", ""), "nvidia/gpu" -> ("nvidia", "gpu", ""),
// "nvidia/gpu/H100" -> ("nvidia", "gpu", "H100"). The model part may contain
// slashes and spaces.
func ParseDeviceName(name string) (vendor, typ, model string, err error) {
	parts := strings.SplitN(name, "/", 3)
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			return "", "", "", fmt.Errorf("device name %q: want <type>, <vendor>/<type> or <vendor>/<type>/<model>", name)
		}
	}
	switch len(parts) {
	case 1:
		return "", parts[0], "", nil
	case 2:
		return parts[0], parts[1], "", nil
	default:
		return parts[0], parts[1], parts[2], nil
	}
}

// LookupTaskGroup returns the named group or nil.
func (j *Job) LookupTaskGroup(name string) *TaskGroup {
	for _, tg := range j.TaskGroups {
		if tg.Name == name {
			return tg
		}
	}
	return nil
}

// Stopped reports whether the job has been stopped (or is nil).
func (j *Job) Stopped() bool { return j == nil || j.Stop }

// Copy returns a deep copy of the job.
func (j *Job) Copy() *Job {
	if j == nil {
		return nil
	}
	c := *j
	c.Datacenters = slices.Clone(j.Datacenters)
	c.Constraints = copyConstraints(j.Constraints)
	c.Affinities = copyAffinities(j.Affinities)
	c.Spreads = copySpreads(j.Spreads)
	c.Meta = maps.Clone(j.Meta)
	c.Update = j.Update.Copy()
	c.UI, c.Migrate = j.UI.Copy(), j.Migrate.Copy()
	copyPeriodic(&c, j)
	if j.Preemptible != nil {
		v := *j.Preemptible
		c.Preemptible = &v
	}
	c.TaskGroups = make([]*TaskGroup, len(j.TaskGroups))
	for i, tg := range j.TaskGroups {
		c.TaskGroups[i] = tg.Copy()
	}
	return &c
}

// Copy returns a deep copy of the group.
func (tg *TaskGroup) Copy() *TaskGroup {
	if tg == nil {
		return nil
	}
	c := *tg
	c.Constraints = copyConstraints(tg.Constraints)
	c.Affinities = copyAffinities(tg.Affinities)
	c.Spreads = copySpreads(tg.Spreads)
	c.Meta = maps.Clone(tg.Meta)
	c.Update = tg.Update.Copy()
	c.Gang = tg.Gang.Copy()
	c.Distributed = tg.Distributed.Copy()
	c.Checkpoint = tg.Checkpoint.Copy()
	c.Networks = copyNetworks(tg.Networks)
	c.Services = copyServices(tg.Services)
	c.Volumes = copyVolumes(tg.Volumes)
	c.EphemeralDisk = tg.EphemeralDisk.Copy()
	c.Disconnect = tg.Disconnect.Copy()
	if tg.MaxClientDisconnect != nil {
		v := *tg.MaxClientDisconnect
		c.MaxClientDisconnect = &v
	}
	c.Scaling, c.Migrate = tg.Scaling.Copy(), tg.Migrate.Copy()
	if tg.RestartPolicy != nil {
		rp := *tg.RestartPolicy
		c.RestartPolicy = &rp
	}
	if tg.ReschedulePolicy != nil {
		rp := *tg.ReschedulePolicy
		c.ReschedulePolicy = &rp
	}
	c.Tasks = make([]*Task, len(tg.Tasks))
	for i, t := range tg.Tasks {
		c.Tasks[i] = t.Copy()
	}
	return &c
}

// Copy returns a deep copy of the task. Config values are copied one level
// deep (nested maps and lists in driver config are treated as immutable).
func (t *Task) Copy() *Task {
	if t == nil {
		return nil
	}
	c := *t
	c.Config = maps.Clone(t.Config)
	c.Env = maps.Clone(t.Env)
	c.Meta = maps.Clone(t.Meta)
	c.Constraints = copyConstraints(t.Constraints)
	c.Affinities = copyAffinities(t.Affinities)
	c.Resources = t.Resources.Copy()
	c.Services = copyServices(t.Services)
	c.Lifecycle = t.Lifecycle.Copy()
	c.VolumeMounts = copyVolumeMounts(t.VolumeMounts)
	if t.LogConfig != nil {
		lc := *t.LogConfig
		c.LogConfig = &lc
	}
	if t.DispatchPayload != nil {
		dp := *t.DispatchPayload
		c.DispatchPayload = &dp
	}
	c.Templates = copySlice(t.Templates, (*Template).Copy)
	c.Artifacts = copySlice(t.Artifacts, (*TaskArtifact).Copy)
	return &c
}

// copySlice deep-copies a slice of pointers with cp; nil stays nil.
func copySlice[T any](in []*T, cp func(*T) *T) []*T {
	if in == nil {
		return nil
	}
	out := make([]*T, len(in))
	for i, v := range in {
		out[i] = cp(v)
	}
	return out
}

// Copy returns a deep copy of the resources.
func (r *Resources) Copy() *Resources {
	if r == nil {
		return nil
	}
	c := *r
	c.Devices = make([]*RequestedDevice, len(r.Devices))
	for i, d := range r.Devices {
		if d == nil {
			continue
		}
		dc := *d
		dc.Constraints = copyConstraints(d.Constraints)
		dc.Affinities = copyAffinities(d.Affinities)
		c.Devices[i] = &dc
	}
	c.Networks = copyNetworks(r.Networks)
	return &c
}

func copyConstraints(in []*Constraint) []*Constraint {
	if in == nil {
		return nil
	}
	out := make([]*Constraint, len(in))
	for i, c := range in {
		if c == nil {
			continue
		}
		cc := *c
		out[i] = &cc
	}
	return out
}

func copyAffinities(in []*Affinity) []*Affinity {
	if in == nil {
		return nil
	}
	out := make([]*Affinity, len(in))
	for i, a := range in {
		if a == nil {
			continue
		}
		ac := *a
		out[i] = &ac
	}
	return out
}

// JobListStub is the summary returned by job list endpoints.
type JobListStub struct {
	ID                string
	ParentID          string
	Periodic          bool
	ParameterizedJob  bool
	Name              string
	Namespace         string
	Datacenters       []string
	Type              string
	Priority          int
	Status            string
	StatusDescription string
	Stop              bool
	JobSummary        *JobSummary
	// GPUs is how many GPUs the job asks for in all (Drover).
	GPUs           int
	CreateIndex    uint64
	ModifyIndex    uint64
	JobModifyIndex uint64
	SubmitTime     int64
}

// Stub returns the job's list stub; summary may be nil.
func (j *Job) Stub(summary *JobSummary) *JobListStub {
	return &JobListStub{
		ID: j.ID, ParentID: j.ParentID, Name: j.Name, Namespace: j.Namespace,
		Periodic: j.Periodic != nil, ParameterizedJob: j.ParameterizedJob != nil,
		Datacenters: j.Datacenters, Type: j.Type, Priority: j.Priority,
		Status: j.Status, StatusDescription: j.StatusDescription, Stop: j.Stop,
		JobSummary:  summary,
		GPUs:        j.GPUCount(),
		CreateIndex: j.CreateIndex, ModifyIndex: j.ModifyIndex,
		JobModifyIndex: j.JobModifyIndex, SubmitTime: j.SubmitTime,
	}
}

// GPUCount is how many GPUs (device requests of type gpu) the job asks
// for across all its groups' allocations.
func (j *Job) GPUCount() int {
	n := 0
	for _, tg := range j.TaskGroups {
		for _, t := range tg.Tasks {
			if t.Resources == nil {
				continue
			}
			for _, d := range t.Resources.Devices {
				if _, typ, _, err := ParseDeviceName(d.Name); err == nil && typ == "gpu" {
					n += int(d.Count) * tg.Count
				}
			}
		}
	}
	return n
}

// JobSummary counts a job's allocations per group by client status.
type JobSummary struct {
	JobID       string
	Namespace   string
	Summary     map[string]TaskGroupSummary
	CreateIndex uint64
	ModifyIndex uint64
}

// TaskGroupSummary counts one group's allocations.
type TaskGroupSummary struct {
	Queued   int
	Complete int
	Failed   int
	Running  int
	Starting int
	Lost     int
	Unknown  int // on a disconnected node (structs/disconnect.go)
}
