package jobspec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// Schemas of a task's template and artifact blocks (Nomad's names).
var (
	templateSchema = &schema{
		attrs: []string{"data", "source", "destination", "env", "change_mode", "change_signal",
			"perms", "left_delimiter", "right_delimiter", "splay", "error_on_missing_key"},
		unsupported: []string{"change_script", "uid", "gid", "vault_grace", "wait", "once"},
	}
	artifactSchema = &schema{
		attrs:       []string{"source", "destination", "mode", "options", "headers"},
		blocks:      []hcl.BlockHeaderSchema{block("options"), block("headers")},
		unsupported: []string{"chown"},
	}
	templateChangeModes = []string{structs.TemplateChangeModeRestart, structs.TemplateChangeModeSignal, structs.TemplateChangeModeNoop}
	artifactModes       = []string{structs.ArtifactModeAny, structs.ArtifactModeFile, structs.ArtifactModeDir}
)

// templateBlock decodes a task's template block; what structs checks after
// decoding (destination inside the task directory, signal names) is
// reported here with the block's position.
func (d *decoder) templateBlock(b *hcl.Block) *structs.Template {
	t := &structs.Template{}
	c := d.content(b.Body, templateSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "data":
			t.EmbeddedTmpl, _ = d.str(a)
		case "source":
			t.SourcePath, _ = d.str(a)
		case "destination":
			t.DestPath, _ = d.str(a)
		case "env":
			t.Envvars, _ = d.boolean(a)
		case "change_mode":
			if s, ok := d.str(a); ok && s == "script" {
				d.errorf(a.Expr.Range(), "Unsupported change_mode", "change_mode \"script\" is not supported by Drover yet; use restart, signal or noop.")
				continue
			}
			t.ChangeMode = d.oneOf(a, templateChangeModes)
		case "change_signal":
			t.ChangeSignal, _ = d.str(a)
		case "perms":
			t.Perms, _ = d.str(a)
		case "left_delimiter":
			t.LeftDelim, _ = d.str(a)
		case "right_delimiter":
			t.RightDelim, _ = d.str(a)
		case "splay":
			t.Splay, _ = d.duration(a)
		case "error_on_missing_key":
			t.ErrMissingKey, _ = d.boolean(a)
		}
	}
	if c.Attributes["destination"] == nil {
		d.errorf(b.DefRange, "Missing required argument", "The argument \"destination\" is required in a template block.")
		return t
	}
	d.checkStruct(b.DefRange, "template", t.Validate)
	return t
}

// artifact decodes a task's artifact block.
func (d *decoder) artifact(b *hcl.Block) *structs.TaskArtifact {
	a := &structs.TaskArtifact{}
	c := d.content(b.Body, artifactSchema)
	for _, at := range sortedAttrs(c.Attributes) {
		switch at.Name {
		case "source":
			a.GetterSource, _ = d.str(at)
		case "destination":
			a.RelativeDest, _ = d.str(at)
		case "mode":
			a.GetterMode = d.oneOf(at, artifactModes)
		}
	}
	a.GetterOptions = d.stringMap(c, "options")
	a.GetterHeaders = d.stringMap(c, "headers")
	if c.Attributes["source"] == nil {
		d.errorf(b.DefRange, "Missing required argument", "The argument \"source\" is required in an artifact block.")
		return a
	}
	d.checkStruct(b.DefRange, "artifact", a.Validate)
	return a
}

// checkStruct reports a block's structs-level validation errors at the
// block.
func (d *decoder) checkStruct(rng hcl.Range, what string, validate func() error) {
	if err := validate(); err != nil {
		d.errorf(rng, fmt.Sprintf("Invalid %s block", what), "%v", err)
	}
}
