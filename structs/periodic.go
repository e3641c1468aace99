package structs

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // time zones load on hosts without /usr/share/zoneinfo

	"github.com/hashicorp/cronexpr"
)

// Periodic and parameterized jobs (Nomad's). A parent job carries the
// Periodic or ParameterizedJob block: it is stored but never scheduled.
// The leader launches children of a periodic parent at each cron time
// (`<parent>/periodic-<unix seconds>`), and Job.Dispatch creates children
// of a parameterized one (`<parent>/dispatch-<unix>-<8 hex>`). Children
// carry ParentID and are ordinary jobs.

// PeriodicSpecCron is the only periodic spec type (Nomad's).
const PeriodicSpecCron = "cron"

// Parameterized payload modes.
const (
	DispatchPayloadOptional  = "optional"
	DispatchPayloadRequired  = "required"
	DispatchPayloadForbidden = "forbidden"
)

// Bounds on periodic and parameterized jobs.
const (
	// DispatchPayloadSizeLimit is the largest dispatch payload (Nomad's).
	DispatchPayloadSizeLimit = 16 * 1024
	// PeriodicMaxSpecs is the most cron specs one job may have.
	PeriodicMaxSpecs = 64
	// ParameterizedMaxMetaKeys bounds meta_required + meta_optional.
	ParameterizedMaxMetaKeys = 64
	// DispatchMaxMeta is the most meta pairs one dispatch may carry.
	DispatchMaxMeta = 64
	// DispatchMaxMetaValue is the longest dispatch meta value, in bytes.
	DispatchMaxMetaValue = 4096
)

// Child ID infixes.
const (
	PeriodicLaunchSuffix = "/periodic-"
	DispatchLaunchSuffix = "/dispatch-"
)

// PeriodicConfig launches a job's children on a cron schedule.
type PeriodicConfig struct {
	Enabled bool
	// Spec is one cron expression (HCL `cron`); Specs several (`crons`),
	// the next launch being the earliest of them.
	Spec            string
	Specs           []string `json:",omitempty"`
	SpecType        string
	ProhibitOverlap bool
	TimeZone        string
}

// ParameterizedJobConfig makes a job a template that Job.Dispatch
// instantiates with a payload and meta.
type ParameterizedJobConfig struct {
	Payload      string
	MetaRequired []string
	MetaOptional []string
}

// DispatchPayloadConfig says where a task finds the dispatch payload:
// File, relative to the task's local/ directory.
type DispatchPayloadConfig struct {
	File string
}

// IsPeriodic reports whether the job has a periodic block.
func (j *Job) IsPeriodic() bool { return j != nil && j.Periodic != nil }

// IsPeriodicActive reports whether the leader launches the job's
// children: periodic, enabled, not stopped and not parameterized (a
// periodic parameterized job's dispatched children are the periodic
// ones; Nomad's rule).
func (j *Job) IsPeriodicActive() bool {
	return j.IsPeriodic() && j.Periodic.Enabled && !j.Stop && !j.IsParameterized()
}

// IsParameterized reports whether the job is a dispatch template.
func (j *Job) IsParameterized() bool { return j != nil && j.ParameterizedJob != nil && !j.Dispatched }

// IsParent reports whether the job only makes children and is never
// scheduled itself.
func (j *Job) IsParent() bool { return j.IsPeriodic() || j.IsParameterized() }

// Canonicalize fills the defaults Nomad fills.
func (p *PeriodicConfig) Canonicalize() {
	if p == nil {
		return
	}
	if p.SpecType == "" {
		p.SpecType = PeriodicSpecCron
	}
	if p.TimeZone == "" {
		p.TimeZone = "UTC"
	}
}

// Canonicalize fills the default payload mode.
func (p *ParameterizedJobConfig) Canonicalize() {
	if p != nil && p.Payload == "" {
		p.Payload = DispatchPayloadOptional
	}
}

// specs is every cron expression of p.
func (p *PeriodicConfig) specs() []string {
	out := slices.Clone(p.Specs)
	if p.Spec != "" {
		out = append(out, p.Spec)
	}
	return out
}

// Validate checks the specs parse and the time zone loads.
func (p *PeriodicConfig) Validate() error {
	if p == nil {
		return nil
	}
	var errs []error
	specs := p.specs()
	switch {
	case p.Spec != "" && len(p.Specs) > 0:
		errs = append(errs, errors.New("periodic: set cron or crons, not both"))
	case len(specs) == 0:
		errs = append(errs, errors.New("periodic: missing cron"))
	case len(specs) > PeriodicMaxSpecs:
		errs = append(errs, fmt.Errorf("periodic: %d crons, at most %d", len(specs), PeriodicMaxSpecs))
		specs = nil
	}
	if p.SpecType != PeriodicSpecCron {
		errs = append(errs, fmt.Errorf("periodic: spec type %q is not %q", p.SpecType, PeriodicSpecCron))
	}
	for _, s := range specs {
		if _, err := parseCron(s); err != nil {
			errs = append(errs, fmt.Errorf("periodic: cron %q: %w", clip(s), err))
		}
	}
	if _, err := time.LoadLocation(p.TimeZone); err != nil || len(p.TimeZone) > 128 {
		errs = append(errs, fmt.Errorf("periodic: time_zone %q is not a known time zone", clip(p.TimeZone)))
	}
	return errors.Join(errs...)
}

// parseCron parses one spec; "@reboot" has no meaning for a cluster.
func parseCron(spec string) (*cronexpr.Expression, error) {
	if len(spec) > 256 {
		return nil, errors.New("longer than 256 bytes")
	}
	if strings.TrimSpace(spec) == "@reboot" {
		return nil, errors.New("@reboot is not supported")
	}
	return cronexpr.Parse(spec)
}

// Next returns the first launch time strictly after from, in the
// config's time zone, or the zero time when no spec has one.
func (p *PeriodicConfig) Next(from time.Time) (time.Time, error) {
	loc, err := time.LoadLocation(p.TimeZone)
	if err != nil {
		return time.Time{}, fmt.Errorf("periodic time zone: %w", err)
	}
	var next time.Time
	for _, s := range p.specs() {
		e, err := parseCron(s)
		if err != nil {
			return time.Time{}, fmt.Errorf("periodic cron %q: %w", s, err)
		}
		t := e.Next(from.In(loc))
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next, nil
}

// Validate checks the payload mode and meta key lists.
func (p *ParameterizedJobConfig) Validate() error {
	if p == nil {
		return nil
	}
	var errs []error
	switch p.Payload {
	case DispatchPayloadOptional, DispatchPayloadRequired, DispatchPayloadForbidden:
	default:
		errs = append(errs, fmt.Errorf("parameterized: payload %q is not one of optional, required, forbidden", clip(p.Payload)))
	}
	if n := len(p.MetaRequired) + len(p.MetaOptional); n > ParameterizedMaxMetaKeys {
		errs = append(errs, fmt.Errorf("parameterized: %d meta keys, at most %d", n, ParameterizedMaxMetaKeys))
		return errors.Join(errs...)
	}
	seen := map[string]bool{}
	for _, k := range slices.Concat(p.MetaRequired, p.MetaOptional) {
		switch {
		case k == "" || len(k) > 128 || strings.ContainsAny(k, "= \t\n\x00"):
			errs = append(errs, fmt.Errorf("parameterized: meta key %q must be 1-128 bytes without '=' or spaces", clip(k)))
		case seen[k]:
			errs = append(errs, fmt.Errorf("parameterized: meta key %q listed twice", k))
		}
		seen[k] = true
	}
	return errors.Join(errs...)
}

// Validate checks the payload file stays inside the task's local/
// directory.
func (d *DispatchPayloadConfig) Validate() error {
	if d == nil {
		return nil
	}
	f := d.File
	switch {
	case f == "":
		return errors.New("dispatch_payload: missing file")
	case len(f) > 256 || strings.ContainsRune(f, 0):
		return fmt.Errorf("dispatch_payload: file %q is not a file name", clip(f))
	case filepath.IsAbs(f):
		return fmt.Errorf("dispatch_payload: file %q must be relative to the task's local directory", clip(f))
	}
	if c := filepath.Clean(f); c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("dispatch_payload: file %q escapes the task's local directory", clip(f))
	}
	return nil
}

// validatePeriodic is the part of Job.Validate for the blocks above.
func (j *Job) validatePeriodic() error {
	var errs []error
	batch := j.Type == JobTypeBatch || j.Type == JobTypeSysBatch
	if j.Periodic != nil {
		if j.Periodic.Enabled && !batch {
			errs = append(errs, fmt.Errorf("job %q: periodic is for batch and sysbatch jobs, not %s", j.ID, j.Type))
		}
		if err := j.Periodic.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("job %q: %w", j.ID, err))
		}
	}
	if j.ParameterizedJob != nil {
		if !batch {
			errs = append(errs, fmt.Errorf("job %q: parameterized is for batch and sysbatch jobs, not %s", j.ID, j.Type))
		}
		if err := j.ParameterizedJob.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("job %q: %w", j.ID, err))
		}
	}
	if len(j.Payload) > DispatchPayloadSizeLimit {
		errs = append(errs, fmt.Errorf("job %q: payload of %d bytes over the limit %d", j.ID, len(j.Payload), DispatchPayloadSizeLimit))
	}
	for _, tg := range j.TaskGroups {
		for _, t := range tg.Tasks {
			if t == nil || t.DispatchPayload == nil {
				continue
			}
			if err := t.DispatchPayload.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("job %q: group %q: task %q: %w", j.ID, tg.Name, t.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// validChildID is validIDRe for each part of a child's ID.
func validChildID(id string) bool {
	parts := strings.Split(id, "/")
	if len(parts) < 2 || len(id) > 256 {
		return false
	}
	for _, p := range parts {
		if !validIDRe.MatchString(p) {
			return false
		}
	}
	return true
}

// copyPeriodic deep-copies the periodic and parameterized fields of j
// into c.
func copyPeriodic(c, j *Job) {
	if j.Periodic != nil {
		p := *j.Periodic
		p.Specs = slices.Clone(j.Periodic.Specs)
		c.Periodic = &p
	}
	if j.ParameterizedJob != nil {
		p := *j.ParameterizedJob
		p.MetaRequired = slices.Clone(p.MetaRequired)
		p.MetaOptional = slices.Clone(p.MetaOptional)
		c.ParameterizedJob = &p
	}
	c.Payload = slices.Clone(j.Payload)
}

// PeriodicChildID is the ID of the child launched at launch.
func PeriodicChildID(parent string, launch time.Time) string {
	return fmt.Sprintf("%s%s%d", parent, PeriodicLaunchSuffix, launch.Unix())
}

// PeriodicLaunchTime parses the launch time out of a periodic child's ID.
func PeriodicLaunchTime(parent, child string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(child, parent+PeriodicLaunchSuffix)
	if !ok {
		return time.Time{}, false
	}
	var sec int64
	if _, err := fmt.Sscanf(rest, "%d", &sec); err != nil || fmt.Sprint(sec) != rest {
		return time.Time{}, false
	}
	return time.Unix(sec, 0), true
}

// DeriveChild returns a copy of the parent job made into a child: the ID
// and parent set, the parent's blocks removed (Nomad keeps a dispatched
// child's Periodic, so a periodic parameterized job dispatches periodic
// children).
func (j *Job) DeriveChild(id string) *Job {
	c := j.Copy()
	c.ID, c.Name, c.ParentID = id, id, j.ID
	c.Periodic = nil
	c.Status, c.StatusDescription = "", ""
	c.CreateIndex, c.ModifyIndex, c.JobModifyIndex, c.Version = 0, 0, 0, 0
	return c
}

// MergeMeta sets meta over the job's own.
func (j *Job) MergeMeta(meta map[string]string) {
	if len(meta) == 0 {
		return
	}
	if j.Meta == nil {
		j.Meta = map[string]string{}
	}
	maps.Copy(j.Meta, meta)
}
