package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/droverhq/drover/structs"
)

// quotaFile is a quota specification file in HCL: Drover's labelled
// block or Nomad's top-level form.
//
//	quota "team-a-gpus" {                 name        = "team-a-gpus"
//	  description = "..."                 description = "..."
//	  limit { ... }                       limit { ... }
//	}
type quotaFile struct {
	Quotas      []quotaBlock `hcl:"quota,block"`
	Name        *string      `hcl:"name,optional"`
	Description *string      `hcl:"description,optional"`
	Limits      []limitBlock `hcl:"limit,block"`
}

type quotaBlock struct {
	Name        string       `hcl:"name,label"`
	Description *string      `hcl:"description,optional"`
	Limits      []limitBlock `hcl:"limit,block"`
}

type limitBlock struct {
	Region      string            `hcl:"region"`
	RegionLimit *regionLimitBlock `hcl:"region_limit,block"`
}

// regionLimitBlock holds a region_limit's values: cpu in MHz, gpu a count,
// memory and gpu_memory in MiB or as sizes ("160 GiB"); 0 or absent means
// unlimited and -1 none allowed, as in Nomad.
type regionLimitBlock struct {
	CPU       *int64         `hcl:"cpu,optional"`
	Memory    hcl.Expression `hcl:"memory,optional"`
	GPU       *int64         `hcl:"gpu,optional"`
	GPUMemory hcl.Expression `hcl:"gpu_memory,optional"`
}

// parseQuotaSpec reads a quota specification file, HCL or JSON (Nomad's
// QuotaSpec shape, recognised as for job files), and returns it
// validated. filename is used in error positions only.
func parseQuotaSpec(filename string, src []byte) (*structs.QuotaSpec, error) {
	var spec *structs.QuotaSpec
	var err error
	if trimmed := bytes.TrimSpace(src); len(trimmed) > 0 && trimmed[0] == '{' || strings.HasSuffix(strings.ToLower(filename), ".json") {
		spec, err = parseQuotaJSON(filename, src)
	} else {
		spec, err = parseQuotaHCL(filename, src)
	}
	if err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	return spec, nil
}

func parseQuotaJSON(filename string, src []byte) (*structs.QuotaSpec, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	var spec structs.QuotaSpec
	if err := dec.Decode(&spec); err != nil {
		return nil, fmt.Errorf("%s: not a quota specification in JSON: %w", filename, err)
	}
	if err := spec.CheckShape(); err != nil {
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	return &spec, nil
}

func parseQuotaHCL(filename string, src []byte) (*structs.QuotaSpec, error) {
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return nil, diags
	}
	var file quotaFile
	if diags := gohcl.DecodeBody(f.Body, nil, &file); diags.HasErrors() {
		return nil, diags
	}
	var spec *structs.QuotaSpec
	var limits []limitBlock
	switch {
	case len(file.Quotas) > 1:
		return nil, fmt.Errorf("%s: %d quota blocks: give one quota per file", filename, len(file.Quotas))
	case len(file.Quotas) == 1 && (file.Name != nil || len(file.Limits) > 0):
		return nil, fmt.Errorf("%s: both a quota block and top-level name or limit: use one form", filename)
	case len(file.Quotas) == 1:
		q := file.Quotas[0]
		spec, limits = &structs.QuotaSpec{Name: q.Name, Description: deref(q.Description)}, q.Limits
	case file.Name != nil:
		spec, limits = &structs.QuotaSpec{Name: *file.Name, Description: deref(file.Description)}, file.Limits
	default:
		return nil, fmt.Errorf(`%s: no quota: want quota "<name>" { limit { region = "global" region_limit { ... } } }`, filename)
	}
	for _, l := range limits {
		ql := &structs.QuotaLimit{Region: l.Region}
		if l.RegionLimit != nil {
			rl, err := l.RegionLimit.decode()
			if err != nil {
				return nil, err
			}
			ql.RegionLimit = rl
		}
		spec.Limits = append(spec.Limits, ql)
	}
	return spec, nil
}

func (b *regionLimitBlock) decode() (*structs.RegionLimit, error) {
	memory, err := megabytes(b.Memory, "memory")
	if err != nil {
		return nil, err
	}
	gpuMemory, err := megabytes(b.GPUMemory, "gpu_memory")
	if err != nil {
		return nil, err
	}
	return &structs.RegionLimit{CPU: deref(b.CPU), MemoryMB: memory, GPUs: deref(b.GPU), GPUMemoryMB: gpuMemory}, nil
}

// megabytes evaluates a size attribute: a number of MiB or a string with
// a unit ("160 GiB"); absent is 0.
func megabytes(expr hcl.Expression, name string) (int64, error) {
	v, diags := expr.Value(nil)
	if diags.HasErrors() {
		return 0, diags
	}
	bad := func(detail string) error {
		r := expr.Range()
		return fmt.Errorf("%s: %s: %s", r.String(), name, detail)
	}
	switch {
	case v.IsNull():
		return 0, nil
	case !v.IsKnown():
		return 0, bad("value is not known")
	case v.Type() == cty.Number:
		f, _ := v.AsBigFloat().Float64()
		if f != math.Trunc(f) || math.Abs(f) > math.MaxInt32<<16 {
			return 0, bad(fmt.Sprintf("%v is not a whole number of MiB", f))
		}
		return int64(f), nil
	case v.Type() == cty.String:
		s := v.AsString()
		if strings.TrimSpace(s) == "-1" {
			return -1, nil
		}
		b, err := structs.ParseBytes(s)
		if err != nil {
			return 0, bad(err.Error())
		}
		return int64(b >> 20), nil
	}
	return 0, bad("want a number of MiB or a size such as \"160 GiB\"")
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// quotaErrorLines splits a parse error into lines for the UI: one per
// HCL diagnostic, or the error as it is.
func quotaErrorLines(err error) []string {
	var diags hcl.Diagnostics
	if errors.As(err, &diags) {
		lines := make([]string, 0, len(diags))
		for _, d := range diags {
			lines = append(lines, d.Error())
		}
		return lines
	}
	return strings.Split(err.Error(), "\n")
}
