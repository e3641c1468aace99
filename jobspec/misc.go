package jobspec

import (
	"math"

	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// The smaller Nomad job file items: job all_at_once, ui and migrate;
// group scaling, migrate, shutdown_delay and prevent_reschedule_on_lost;
// task shutdown_delay and kind (task scaling blocks are refused).

var (
	uiSchema = &schema{
		attrs:  []string{"description"},
		blocks: []hcl.BlockHeaderSchema{block("link")},
	}
	uiLinkSchema  = &schema{attrs: []string{"label", "url"}}
	migrateSchema = &schema{
		attrs: []string{"max_parallel", "health_check", "min_healthy_time", "healthy_deadline"},
	}
	scalingSchema = &schema{
		attrs:  []string{"enabled", "min", "max", "type"},
		blocks: []hcl.BlockHeaderSchema{block("policy")},
	}
)

// jobMisc decodes the job's all_at_once, ui and migrate.
func (d *decoder) jobMisc(c *hcl.BodyContent, j *structs.Job) {
	if a := c.Attributes["all_at_once"]; a != nil {
		j.AllAtOnce, _ = d.boolean(a)
	}
	if b := d.single(c, "ui"); b != nil {
		j.UI = d.ui(b)
	}
	if b := d.single(c, "migrate"); b != nil {
		j.Migrate = d.migrate(b, structs.DefaultMigrateStrategy())
	}
}

// groupMisc decodes a group's scaling, migrate, shutdown_delay and
// prevent_reschedule_on_lost. A group without count takes its scaling
// min, as in Nomad. jobMigrate is the job's block, which the group's
// overrides field by field.
func (d *decoder) groupMisc(c *hcl.BodyContent, tg *structs.TaskGroup, jobMigrate *structs.MigrateStrategy) {
	if b := d.single(c, "scaling"); b != nil {
		tg.Scaling = d.scaling(b)
		if c.Attributes["count"] == nil && tg.Scaling.Min != nil {
			tg.Count = int(*tg.Scaling.Min)
		}
	}
	if b := d.single(c, "migrate"); b != nil {
		base := jobMigrate
		if base == nil {
			base = structs.DefaultMigrateStrategy()
		}
		tg.Migrate = d.migrate(b, base)
	}
	if a := c.Attributes["shutdown_delay"]; a != nil {
		tg.ShutdownDelay, _ = d.duration(a)
	}
	if a := c.Attributes["prevent_reschedule_on_lost"]; a != nil {
		tg.PreventRescheduleOnLost, _ = d.boolean(a)
	}
}

// taskMisc decodes a task's shutdown_delay and kind, and refuses task
// scaling blocks.
func (d *decoder) taskMisc(c *hcl.BodyContent, t *structs.Task) {
	if a := c.Attributes["shutdown_delay"]; a != nil {
		t.ShutdownDelay, _ = d.duration(a)
	}
	if a := c.Attributes["kind"]; a != nil {
		t.Kind, _ = d.str(a)
	}
	for _, b := range c.Blocks.OfType("scaling") {
		d.errorf(b.DefRange, "Unsupported block type",
			"A task's scaling %q block is Nomad Enterprise's dynamic application sizing, which Drover does not have; set the task's resources instead (a group's scaling block, for its count, is supported).", b.Labels[0])
	}
}

// ui decodes a job's ui block.
func (d *decoder) ui(b *hcl.Block) *structs.JobUIConfig {
	u := &structs.JobUIConfig{}
	c := d.content(b.Body, uiSchema)
	if a := c.Attributes["description"]; a != nil {
		u.Description, _ = d.str(a)
	}
	for _, lb := range c.Blocks.OfType("link") {
		l := &structs.JobUILink{}
		lc := d.content(lb.Body, uiLinkSchema)
		if a := lc.Attributes["label"]; a != nil {
			l.Label, _ = d.str(a)
		}
		if a := lc.Attributes["url"]; a != nil {
			l.URL, _ = d.str(a)
		}
		u.Links = append(u.Links, l)
	}
	d.check(b, "ui", u.Validate())
	return u
}

// migrate decodes a migrate block over base.
func (d *decoder) migrate(b *hcl.Block, base *structs.MigrateStrategy) *structs.MigrateStrategy {
	m := base.Copy()
	before := len(d.diags)
	c := d.content(b.Body, migrateSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "max_parallel":
			if n, ok := d.integer(a, 0, math.MaxInt32); ok {
				m.MaxParallel = int(n)
			}
		case "health_check":
			if v := d.oneOf(a, []string{"checks", "task_states"}); v != "" {
				m.HealthCheck = v
			}
		case "min_healthy_time":
			m.MinHealthyTime, _ = d.duration(a)
		case "healthy_deadline":
			m.HealthyDeadline, _ = d.duration(a)
		}
	}
	if len(d.diags) == before {
		d.check(b, "migrate", m.Validate())
	}
	return m
}

// scaling decodes a group's scaling block. max is required; min
// defaults to the group's count (Job.Canonicalize). The policy block is
// stored as written, for an external autoscaler.
func (d *decoder) scaling(b *hcl.Block) *structs.ScalingPolicy {
	p := &structs.ScalingPolicy{}
	c := d.content(b.Body, scalingSchema)
	if c.Attributes["max"] == nil {
		d.errorf(b.DefRange, "Missing scaling max", "A scaling block needs max: the most allocations the group may be scaled to.")
	}
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "enabled":
			if v, ok := d.boolean(a); ok {
				p.Enabled = &v
			}
		case "min":
			if n, ok := d.integer(a, 0, math.MaxInt32); ok {
				p.Min = &n
			}
		case "max":
			if n, ok := d.integer(a, 0, math.MaxInt32); ok {
				p.Max = &n
			}
		case "type":
			p.Type = d.oneOf(a, []string{structs.ScalingPolicyTypeHorizontal})
		}
	}
	if p.Min != nil && p.Max != nil && *p.Max < *p.Min {
		d.errorf(c.Attributes["max"].Expr.Range(), "Invalid scaling block", "max %d must not be less than min %d.", *p.Max, *p.Min)
	}
	if pb := d.single(c, "policy"); pb != nil {
		p.Policy = d.configMap(pb.Body)
	}
	return p
}

// check reports err's lines at the block.
func (d *decoder) check(b *hcl.Block, what string, err error) {
	if err == nil {
		return
	}
	var lines []string
	flattenJoined(err, "", &lines)
	for _, line := range lines {
		d.errorf(b.DefRange, "Invalid "+what+" block", "%s.", line)
	}
}
