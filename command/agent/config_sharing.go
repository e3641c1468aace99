package agent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/droverhq/drover/client/devices/sharing"
	"github.com/droverhq/drover/structs"
)

// GPUSharingConfig is the client's gpu_sharing block: how the node lets
// allocations share its GPUs, for every GPU, per model and per GPU (the
// most specific wins; see client/devices/sharing for the defaults):
//
//	gpu_sharing {
//	  mode        = "exclusive"                      # every other GPU
//	  mps_control = "/usr/bin/nvidia-cuda-mps-control" # optional
//	  model "NVIDIA A100-SXM4-40GB" { mode = "mig" }
//	  gpu "GPU-5c6a8d5e-..." { mode = "mps" }
//	}
type GPUSharingConfig struct {
	Mode       string             `hcl:"mode,optional"`
	MPSControl string             `hcl:"mps_control,optional"`
	Models     []*GPUSharingEntry `hcl:"model,block"`
	GPUs       []*GPUSharingEntry `hcl:"gpu,block"`
}

// GPUSharingEntry is one model or gpu block of gpu_sharing.
type GPUSharingEntry struct {
	Name string `hcl:"name,label"`
	Mode string `hcl:"mode"`
}

// policy returns the sharing policy the client applies.
func (g *GPUSharingConfig) policy() sharing.Policy {
	if g == nil {
		return sharing.Policy{}
	}
	p := sharing.Policy{Mode: g.Mode}
	for _, e := range g.Models {
		if p.Models == nil {
			p.Models = map[string]string{}
		}
		p.Models[e.Name] = e.Mode
	}
	for _, e := range g.GPUs {
		if p.GPUs == nil {
			p.GPUs = map[string]string{}
		}
		p.GPUs[e.Name] = e.Mode
	}
	return p
}

// mpsControl returns the configured MPS control program ("" for the
// default).
func (g *GPUSharingConfig) mpsControl() string {
	if g == nil {
		return ""
	}
	return g.MPSControl
}

// checkGPUSharing checks every client.gpu_sharing block of a parsed
// config file, with file:line,col positions: modes are known ones, model
// and gpu labels are set and not repeated, and a gpu label is a GPU or MIG
// UUID (not an index, which changes with the host's enumeration). gohcl
// has already checked the shape and types.
func checkGPUSharing(body hcl.Body) error {
	root, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	var errs []error
	for _, client := range childBlocks(root, "client") {
		for _, gs := range childBlocks(client.Body, "gpu_sharing") {
			errs = append(errs, checkMode(gs.Body, "gpu_sharing")...)
			seen := map[string]hcl.Range{}
			for _, b := range gs.Body.Blocks {
				if (b.Type != "model" && b.Type != "gpu") || len(b.Labels) != 1 {
					continue
				}
				errs = append(errs, checkEntry(b, seen)...)
			}
		}
	}
	return errors.Join(errs...)
}

// checkEntry checks one model or gpu block.
func checkEntry(b *hclsyntax.Block, seen map[string]hcl.Range) []error {
	label, where := b.Labels[0], b.LabelRanges[0]
	what := fmt.Sprintf("gpu_sharing %s %q", b.Type, label)
	errs := checkMode(b.Body, what)
	key := b.Type + "\x00" + strings.ToLower(label)
	switch {
	case strings.TrimSpace(label) == "":
		errs = append(errs, posErr(where, "gpu_sharing %s: the label must name a %s", b.Type, b.Type))
	case b.Type == "gpu" && !strings.HasPrefix(label, "GPU-") && !strings.HasPrefix(label, "MIG-"):
		errs = append(errs, posErr(where, "%s: a gpu is named by its UUID (GPU-... or MIG-..., as nvidia-smi -L prints it)", what))
	}
	if first, dup := seen[key]; dup {
		errs = append(errs, posErr(where, "%s: repeated (first at line %d)", what, first.Start.Line))
	} else {
		seen[key] = where
	}
	return errs
}

// checkMode checks a body's mode attribute, when it has one.
func checkMode(body *hclsyntax.Body, what string) []error {
	attr, ok := body.Attributes["mode"]
	if !ok {
		return nil
	}
	v, diags := attr.Expr.Value(nil)
	if diags.HasErrors() {
		return nil // gohcl reported it
	}
	v, err := convert.Convert(v, cty.String) // as gohcl did: 3 is "3"
	if err != nil || !v.IsKnown() || v.IsNull() {
		return nil
	}
	if mode := v.AsString(); !structs.ValidSharingMode(mode) {
		return []error{posErr(attr.Expr.Range(), "%s: mode %q is not one of %s", what, mode, strings.Join(structs.SharingModes, ", "))}
	}
	return nil
}

// childBlocks returns body's blocks of type typ.
func childBlocks(body *hclsyntax.Body, typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range body.Blocks {
		if b.Type == typ {
			out = append(out, b)
		}
	}
	return out
}

// posErr is an error that starts with r's file:line,col, like diagError.
func posErr(r hcl.Range, format string, args ...any) error {
	return fmt.Errorf("%s:%d,%d: %s", r.Filename, r.Start.Line, r.Start.Column, fmt.Sprintf(format, args...))
}
