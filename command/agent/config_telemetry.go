package agent

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/droverhq/drover/telemetry"
)

// TelemetryConfig is Nomad's telemetry block: how /v1/metrics answers.
// An unset setting keeps its default; a later file's settings override
// an earlier one's one by one.
//
//	telemetry {
//	  prometheus_metrics  = true
//	  collection_interval = "1s"
//	  disable_hostname    = true
//	}
//
// prometheus_metrics serves /v1/metrics?format=prometheus (off by
// default as in Nomad; on in -dev); collection_interval is how often
// runtime metrics are sampled ("1s"); disable_hostname keeps the host
// name out of go-metrics gauge names (GPU and cluster series never
// carry it in their names).
type TelemetryConfig struct {
	PrometheusMetrics  *bool  `hcl:"prometheus_metrics,optional"`
	CollectionInterval string `hcl:"collection_interval,optional"`
	DisableHostname    *bool  `hcl:"disable_hostname,optional"`
}

// mergeTelemetry overlays o's set telemetry settings onto c's.
func (c *Config) mergeTelemetry(o *TelemetryConfig) {
	if o == nil {
		return
	}
	if c.Telemetry == nil {
		c.Telemetry = &TelemetryConfig{}
	}
	t := c.Telemetry
	if o.PrometheusMetrics != nil {
		t.PrometheusMetrics = o.PrometheusMetrics
	}
	if o.CollectionInterval != "" {
		t.CollectionInterval = o.CollectionInterval
	}
	if o.DisableHostname != nil {
		t.DisableHostname = o.DisableHostname
	}
}

// validateTelemetry checks collection_interval.
func (c *Config) validateTelemetry() []error {
	if c.Telemetry == nil {
		return nil
	}
	if _, err := positiveDuration(c.Telemetry.CollectionInterval); err != nil {
		return []error{fmt.Errorf("agent config: telemetry.collection_interval: %w", err)}
	}
	return nil
}

// telemetryConfig is what the block sets, the defaults filling the rest
// (Validate checked it). -dev serves Prometheus unless the block says no.
func (c *Config) telemetryConfig() telemetry.Config {
	out := telemetry.Config{PrometheusMetrics: c.DevMode, HostName: c.Name}
	t := c.Telemetry
	if t == nil {
		return out
	}
	if t.PrometheusMetrics != nil {
		out.PrometheusMetrics = *t.PrometheusMetrics
	}
	if t.DisableHostname != nil {
		out.DisableHostname = *t.DisableHostname
	}
	out.CollectionInterval = mustDuration(t.CollectionInterval)
	return out
}

// checkTelemetry checks the telemetry blocks' collection_interval where
// it is written, so the error names the file, line and column.
func checkTelemetry(body hcl.Body) error {
	root, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	for _, b := range childBlocks(root, "telemetry") {
		attr, ok := b.Body.Attributes["collection_interval"]
		if !ok {
			continue
		}
		v, diags := attr.Expr.Value(nil)
		if diags.HasErrors() {
			continue // gohcl reported it
		}
		v, err := convert.Convert(v, cty.String)
		if err != nil || !v.IsKnown() || v.IsNull() {
			continue
		}
		if _, err := positiveDuration(v.AsString()); err != nil {
			return posErr(attr.Expr.Range(), "telemetry.collection_interval: %v", err)
		}
	}
	return nil
}
