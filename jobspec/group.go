package jobspec

import (
	"math"

	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// group decodes a group block. An absent count means 1. jobResched and
// jobUpdate are the job-level reschedule policy and update strategy (nil:
// none), which the group's own blocks override field by field.
func (d *decoder) group(b *hcl.Block, jobType string, jobResched *structs.ReschedulePolicy, jobUpdate *structs.UpdateStrategy, jobMigrate *structs.MigrateStrategy) *structs.TaskGroup {
	tg := &structs.TaskGroup{Name: b.Labels[0], Count: 1}
	c := d.content(b.Body, groupSchema)
	if a := c.Attributes["count"]; a != nil {
		if n, ok := d.integer(a, 0, math.MaxInt32); ok {
			tg.Count = int(n)
		}
	}
	d.groupMisc(c, tg, jobMigrate) // misc.go
	tg.Meta = d.stringMap(c, "meta")
	tg.Spreads = d.spreads(c)
	tg.Services = d.services(c)
	if r := d.single(c, "restart"); r != nil {
		tg.RestartPolicy = d.restart(r, jobType)
	}
	tg.ReschedulePolicy = d.groupReschedule(c, jobResched, jobType)
	tg.Update = d.groupUpdate(c, jobUpdate)
	if g := d.single(c, "gang"); g != nil {
		tg.Gang = d.gang(g, tg.Count)
	}
	if b := d.single(c, "distributed"); b != nil {
		tg.Distributed = d.distributed(b) // distributed.go
	}
	tg.Checkpoint = d.checkpoint(c) // checkpoint.go
	d.portLabels = map[string]hcl.Range{}
	tg.Networks = d.networks(c)
	d.groupVolumes(c, tg) // volumes.go
	tasks := map[string]*hcl.Block{}
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "task":
			if first, dup := tasks[blk.Labels[0]]; dup {
				d.errorf(blk.LabelRanges[0], "Duplicate task", "A task named %q is already defined at line %d.", blk.Labels[0], first.DefRange.Start.Line)
				continue
			}
			tasks[blk.Labels[0]] = blk
			tg.Tasks = append(tg.Tasks, d.task(blk))
		case "constraint":
			tg.Constraints = appendNonNil(tg.Constraints, d.constraint(blk))
		case "affinity":
			tg.Affinities = appendNonNil(tg.Affinities, d.affinity(blk))
		}
	}
	if len(tg.Tasks) == 0 {
		d.errorf(b.DefRange, "Missing task", "Group %q must define at least one task block.", tg.Name)
	}
	return tg
}

// gang decodes a gang block (Drover's all-or-nothing placement); min
// is required, the timeout defaults, and the result is checked against
// the group's count.
func (d *decoder) gang(b *hcl.Block, count int) *structs.Gang {
	g := &structs.Gang{}
	before := len(d.diags)
	c := d.content(b.Body, gangSchema)
	if c.Attributes["min"] == nil {
		d.errorf(b.DefRange, "Missing gang min", "A gang block needs min: how many of the group's allocations must be placed together.")
	}
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "name":
			if v, ok := d.str(a); ok {
				g.Name = v
			}
		case "min":
			if n, ok := d.integer(a, 1, math.MaxInt32); ok {
				g.Min = int(n)
			}
		case "timeout":
			if v, ok := d.duration(a); ok {
				g.Timeout = v
			}
		}
	}
	if n := d.single(c, "network"); n != nil {
		g.Network = d.gangNetwork(n) // gang_network.go
	}
	g.Canonicalize()
	if len(d.diags) == before {
		if err := g.Validate(count); err != nil {
			var lines []string
			flattenJoined(err, "", &lines)
			for _, line := range lines {
				d.errorf(b.DefRange, "Invalid gang block", "%s.", line)
			}
		}
	}
	return g
}

var restartModes = []string{structs.RestartModeFail, structs.RestartModeDelay}

// restart decodes a restart block; what it leaves out comes from the job
// type's default policy.
func (d *decoder) restart(b *hcl.Block, jobType string) *structs.RestartPolicy {
	rp := structs.DefaultRestartPolicy(jobType)
	c := d.content(b.Body, restartSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "attempts":
			if n, ok := d.integer(a, 0, math.MaxInt32); ok {
				rp.Attempts = int(n)
			}
		case "interval":
			if v, ok := d.duration(a); ok {
				rp.Interval = v
			}
		case "delay":
			if v, ok := d.duration(a); ok {
				rp.Delay = v
			}
		case "mode":
			if v := d.oneOf(a, restartModes); v != "" {
				rp.Mode = v
			}
		case "render_templates":
			rp.RenderTemplates, _ = d.boolean(a)
		}
	}
	return rp
}

// task decodes a task block. driver is required.
func (d *decoder) task(b *hcl.Block) *structs.Task {
	t := &structs.Task{Name: b.Labels[0]}
	c := d.content(b.Body, taskSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "driver":
			t.Driver, _ = d.str(a)
		case "kill_timeout":
			t.KillTimeout, _ = d.duration(a)
		case "kill_signal":
			t.KillSignal, _ = d.str(a)
		case "user":
			t.User, _ = d.str(a)
		}
	}
	d.taskMisc(c, t) // misc.go
	if c.Attributes["driver"] == nil {
		d.errorf(b.DefRange, "Missing required argument", "The argument \"driver\" is required in task %q, but no definition was found.", t.Name)
	}
	t.Env = d.stringMap(c, "env")
	t.Meta = d.stringMap(c, "meta")
	t.Config = d.taskConfig(c)
	t.Services = d.services(c)
	if r := d.single(c, "resources"); r != nil {
		t.Resources = d.resources(r)
	}
	if l := d.single(c, "logs"); l != nil {
		t.LogConfig = d.logs(l)
	}
	d.taskLifecycle(c, t) // lifecycle.go
	d.volumeMounts(c, t)  // volumes.go
	t.DispatchPayload = d.dispatchPayload(c)
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "constraint":
			t.Constraints = appendNonNil(t.Constraints, d.constraint(blk))
		case "affinity":
			t.Affinities = appendNonNil(t.Affinities, d.affinity(blk))
		case "template":
			t.Templates = append(t.Templates, d.templateBlock(blk))
		case "artifact":
			t.Artifacts = append(t.Artifacts, d.artifact(blk))
		}
	}
	return t
}

// taskConfig reads the driver config, given as a block or an attribute.
func (d *decoder) taskConfig(c *hcl.BodyContent) map[string]any {
	blk := d.single(c, "config")
	a := c.Attributes["config"]
	switch {
	case a != nil && blk != nil:
		d.errorf(blk.DefRange, "Duplicate config block", "The driver config is already set by the config argument at line %d.", a.Range.Start.Line)
	case a != nil:
		v, ok := d.value(a.Expr)
		if !ok {
			return nil
		}
		m, isMap := v.(map[string]any)
		if !isMap {
			d.errorf(a.Expr.Range(), "Incorrect attribute value type", "Inappropriate value for attribute \"config\": an object is required.")
			return nil
		}
		return m
	case blk != nil:
		return d.configMap(blk.Body)
	}
	return nil
}
