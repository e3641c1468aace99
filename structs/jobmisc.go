package structs

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"
)

// JobUIConfig is the job's `ui` block: a description and links the
// CLI's job status and the web UI show (Nomad's api.JobUIConfig).
type JobUIConfig struct {
	Description string
	Links       []*JobUILink `json:",omitempty"`
}

// JobUILink is one link of a job's ui block.
type JobUILink struct {
	Label string
	URL   string
}

// Bounds of a job's ui block.
const (
	JobUIMaxDescription = 4096
	JobUIMaxLinks       = 32
	JobUIMaxLinkLength  = 2048
)

// Validate checks the description's size and that each link is an
// absolute http or https URL with a label.
func (u *JobUIConfig) Validate() error {
	if u == nil {
		return nil
	}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(u.Description) > JobUIMaxDescription {
		add("ui: description of %d bytes: at most %d", len(u.Description), JobUIMaxDescription)
	}
	if len(u.Links) > JobUIMaxLinks {
		add("ui: %d links: at most %d", len(u.Links), JobUIMaxLinks)
	}
	for _, l := range u.Links {
		if l == nil {
			add("ui: link: missing")
			continue
		}
		if err := l.validate(); err != nil {
			add("ui: %w", err)
		}
	}
	return errors.Join(errs...)
}

func (l *JobUILink) validate() error {
	if l.Label == "" || len(l.Label) > JobUIMaxLinkLength || len(l.URL) > JobUIMaxLinkLength {
		return fmt.Errorf("link %q: label must be 1 to %d bytes and url at most %d", clip(l.Label), JobUIMaxLinkLength, JobUIMaxLinkLength)
	}
	u, err := url.Parse(l.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("link %q: url %q must be an absolute http or https URL", l.Label, clip(l.URL))
	}
	return nil
}

// Copy returns a deep copy.
func (u *JobUIConfig) Copy() *JobUIConfig {
	if u == nil {
		return nil
	}
	c := *u
	c.Links = make([]*JobUILink, 0, len(u.Links))
	for _, l := range u.Links {
		if l != nil {
			lc := *l
			c.Links = append(c.Links, &lc)
		}
	}
	return &c
}

// Migrate health checks (Nomad's).
var migrateHealthChecks = []string{"checks", "task_states"}

// MigrateStrategy is the `migrate` block (job or group): how a node
// drain moves the group's allocations: at most MaxParallel at a time,
// each replacement healthy (by HealthCheck) for MinHealthyTime within
// HealthyDeadline. Drover stores and validates it; node drain reads it.
type MigrateStrategy struct {
	MaxParallel     int
	HealthCheck     string
	MinHealthyTime  time.Duration
	HealthyDeadline time.Duration
}

// DefaultMigrateStrategy is Nomad's default.
func DefaultMigrateStrategy() *MigrateStrategy {
	return &MigrateStrategy{MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute}
}

// Validate checks the strategy.
func (m *MigrateStrategy) Validate() error {
	if m == nil {
		return nil
	}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if m.MaxParallel < 0 {
		add("migrate: max_parallel %d must not be negative", m.MaxParallel)
	}
	if !slices.Contains(migrateHealthChecks, m.HealthCheck) {
		add("migrate: health_check %q is not one of checks, task_states", m.HealthCheck)
	}
	if m.MinHealthyTime < 0 {
		add("migrate: min_healthy_time %s must not be negative", m.MinHealthyTime)
	}
	if m.HealthyDeadline <= 0 {
		add("migrate: healthy_deadline %s must be positive", m.HealthyDeadline)
	} else if m.MinHealthyTime >= m.HealthyDeadline {
		add("migrate: min_healthy_time %s must be below healthy_deadline %s", m.MinHealthyTime, m.HealthyDeadline)
	}
	return errors.Join(errs...)
}

// Copy returns a copy.
func (m *MigrateStrategy) Copy() *MigrateStrategy {
	if m == nil {
		return nil
	}
	c := *m
	return &c
}

// canonicalizeMisc fills the defaults of the smaller Nomad blocks:
// groups inherit the job's migrate block (none set means
// DefaultMigrateStrategy to node drain), and scaling policies get their
// derived fields.
func (j *Job) canonicalizeMisc() {
	for _, tg := range j.TaskGroups {
		if tg.Migrate == nil && j.Migrate != nil {
			tg.Migrate = j.Migrate.Copy()
		}
		tg.Scaling.canonicalize(j.Namespace, j.ID, tg)
	}
}

// validateMisc checks the smaller Nomad blocks of a canonicalized job.
func (j *Job) validateMisc() error {
	var errs []error
	if err := j.UI.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("job %q: %w", j.ID, err))
	}
	if err := j.Migrate.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("job %q: %w", j.ID, err))
	}
	for _, tg := range j.TaskGroups {
		if tg.Scaling != nil && (j.Type == JobTypeSystem || j.Type == JobTypeSysBatch) {
			errs = append(errs, fmt.Errorf("job %q: group %q: scaling: a %s job runs one allocation per node and cannot be scaled", j.ID, tg.Name, j.Type))
		}
		if err := tg.validateMisc(); err != nil {
			errs = append(errs, fmt.Errorf("job %q: group %q: %w", j.ID, tg.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (tg *TaskGroup) validateMisc() error {
	var errs []error
	if err := tg.Scaling.validate(tg.Count); err != nil {
		errs = append(errs, err)
	}
	if err := tg.Migrate.Validate(); err != nil {
		errs = append(errs, err)
	}
	if tg.ShutdownDelay < 0 {
		errs = append(errs, fmt.Errorf("shutdown_delay %s must not be negative", tg.ShutdownDelay))
	}
	for _, t := range tg.Tasks {
		if err := t.validateMisc(); err != nil {
			errs = append(errs, fmt.Errorf("task %q: %w", t.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (t *Task) validateMisc() error {
	var errs []error
	if t.ShutdownDelay < 0 {
		errs = append(errs, fmt.Errorf("shutdown_delay %s must not be negative", t.ShutdownDelay))
	}
	if len(t.Kind) > 256 {
		errs = append(errs, fmt.Errorf("kind of %d bytes: at most 256", len(t.Kind)))
	}
	if r := t.Resources; r != nil {
		if r.MemoryMaxMB < 0 || r.DiskMB < 0 {
			errs = append(errs, errors.New("memory_max and disk must not be negative"))
		}
		if r.MemoryMaxMB > 0 && r.MemoryMaxMB < r.MemoryMB {
			errs = append(errs, fmt.Errorf("memory_max %d MB must not be less than memory %d MB", r.MemoryMaxMB, r.MemoryMB))
		}
	}
	return errors.Join(errs...)
}

// miscWarnings are the smaller Nomad settings Drover accepts but ignores.
func (j *Job) miscWarnings() []string {
	var out []string
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			if t != nil && t.Resources != nil && t.Resources.DiskMB > 0 {
				out = append(out, fmt.Sprintf("group %q: task %q: resources disk is deprecated in Nomad and ignored by Drover; use the group's ephemeral_disk", tg.Name, t.Name))
			}
		}
	}
	return out
}

// KillDelay is how long a client waits, after a task's services are
// deregistered and before it signals the task, when the task is
// stopped: the group's shutdown_delay plus the task's.
func (tg *TaskGroup) KillDelay(t *Task) time.Duration {
	var d time.Duration
	if tg != nil {
		d += tg.ShutdownDelay
	}
	if t != nil {
		d += t.ShutdownDelay
	}
	return max(d, 0)
}
