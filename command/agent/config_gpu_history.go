package agent

import (
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/droverhq/drover/client/gpuhistory"
)

// GPUHistoryConfig is the client's gpu_history block: how often each GPU
// is sampled, how much history is kept (window/interval samples per GPU,
// at most structs.MaxGPUHistorySamples), and how long every GPU of an
// allocation must stay under 5% for the allocation to be flagged idle:
//
//	gpu_history {
//	  interval    = "10s"
//	  window      = "1h"
//	  idle_window = "10m"
//	}
type GPUHistoryConfig struct {
	Interval   string `hcl:"interval,optional"`
	Window     string `hcl:"window,optional"`
	IdleWindow string `hcl:"idle_window,optional"`
}

// settings lists the block's durations with their names.
func (g *GPUHistoryConfig) settings() []struct {
	name string
	v    string
} {
	return []struct {
		name string
		v    string
	}{{"interval", g.Interval}, {"window", g.Window}, {"idle_window", g.IdleWindow}}
}

// config returns the client's history settings (Validate checked them;
// zero fields keep the defaults).
func (g *GPUHistoryConfig) config() gpuhistory.Config {
	if g == nil {
		return gpuhistory.Config{}
	}
	return gpuhistory.Config{Interval: mustDuration(g.Interval), Window: mustDuration(g.Window), IdleWindow: mustDuration(g.IdleWindow)}
}

// validateGPUHistory checks the merged block: positive durations and a
// window of 1 to structs.MaxGPUHistorySamples samples.
func (c *ClientConfig) validateGPUHistory() []error {
	g := c.GPUHistory
	if g == nil {
		return nil
	}
	var errs []error
	for _, s := range g.settings() {
		if _, err := positiveDuration(s.v); err != nil {
			errs = append(errs, fmt.Errorf("agent config: client.gpu_history.%s: %w", s.name, err))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if err := g.config().Validate(); err != nil {
		return []error{fmt.Errorf("agent config: client.gpu_history: %w", err)}
	}
	return nil
}

// checkGPUHistory checks every client.gpu_history block of a parsed
// config file with file:line,col positions: each setting is a positive
// duration, and the block's window at its interval is at most the
// sample limit. gohcl has already checked the shape and types.
func checkGPUHistory(body hcl.Body) error {
	root, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	var errs []error
	for _, client := range childBlocks(root, "client") {
		for _, b := range childBlocks(client.Body, "gpu_history") {
			var g GPUHistoryConfig
			vals := map[string]*string{"interval": &g.Interval, "window": &g.Window, "idle_window": &g.IdleWindow}
			bad := false
			for name, dst := range vals {
				attr, ok := b.Body.Attributes[name]
				if !ok {
					continue
				}
				v, diags := attr.Expr.Value(nil)
				if diags.HasErrors() {
					continue // gohcl reported it
				}
				v, err := convert.Convert(v, cty.String) // as gohcl did: 3 is "3"
				if err != nil || !v.IsKnown() || v.IsNull() {
					continue
				}
				*dst = v.AsString()
				if _, err := positiveDuration(*dst); err != nil {
					errs = append(errs, posErr(attr.Expr.Range(), "gpu_history %s: %v", name, err))
					bad = true
				}
			}
			if bad {
				continue
			}
			if err := g.config().Validate(); err != nil {
				errs = append(errs, posErr(b.TypeRange, "%v", err))
			}
		}
	}
	return errors.Join(errs...)
}
