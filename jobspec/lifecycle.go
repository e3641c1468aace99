package jobspec

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

var (
	lifecycleSchema = &schema{attrs: []string{"hook", "sidecar"}}
	lifecycleHooks  = []string{structs.TaskLifecycleHookPrestart, structs.TaskLifecycleHookPoststart, structs.TaskLifecycleHookPoststop}
)

// lifecycle decodes a task's lifecycle block; hook is required.
func (d *decoder) lifecycle(b *hcl.Block) *structs.TaskLifecycleConfig {
	l := &structs.TaskLifecycleConfig{}
	before := len(d.diags)
	c := d.content(b.Body, lifecycleSchema)
	if c.Attributes["hook"] == nil {
		d.errorf(b.DefRange, "Missing required argument", "The argument \"hook\" is required in a lifecycle block (prestart, poststart or poststop).")
	}
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "hook":
			l.Hook = d.oneOf(a, lifecycleHooks)
		case "sidecar":
			l.Sidecar, _ = d.boolean(a)
		}
	}
	if len(d.diags) == before {
		d.checkBlock(b, "Invalid lifecycle block", l.Validate())
	}
	return l
}

// taskLifecycle decodes what orders a task among its group's: the
// lifecycle block and the leader argument.
func (d *decoder) taskLifecycle(c *hcl.BodyContent, t *structs.Task) {
	if b := d.single(c, "lifecycle"); b != nil {
		t.Lifecycle = d.lifecycle(b)
	}
	if a := c.Attributes["leader"]; a != nil {
		t.Leader, _ = d.boolean(a)
	}
}

// checkBlock reports each problem in err (a structs Validate result) at
// block b.
func (d *decoder) checkBlock(b *hcl.Block, summary string, err error) {
	if err == nil {
		return
	}
	var lines []string
	flattenJoined(err, "", &lines)
	for _, line := range lines {
		d.errorf(b.DefRange, summary, "%s.", line)
	}
}
