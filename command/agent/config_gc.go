package agent

import (
	"fmt"
	"time"

	"github.com/droverhq/drover/server"
)

// gcSettings lists the settings with their names, for merge and validate.
func (c *ServerConfig) gcSettings() []struct {
	name string
	v    *string
} {
	return []struct {
		name string
		v    *string
	}{
		{"gc_interval", &c.GCInterval},
		{"job_gc_threshold", &c.JobGCThreshold},
		{"eval_gc_threshold", &c.EvalGCThreshold},
		{"node_gc_threshold", &c.NodeGCThreshold},
	}
}

// mergeGC overlays o's set GC settings onto c.
func (c *ServerConfig) mergeGC(o *ServerConfig) {
	ours, theirs := c.gcSettings(), o.gcSettings()
	for i, s := range theirs {
		if *s.v != "" {
			*ours[i].v = *s.v
		}
	}
}

// validateGC checks that each GC setting is a positive duration.
func (c *ServerConfig) validateGC() []error {
	var errs []error
	for _, s := range c.gcSettings() {
		if _, err := positiveDuration(*s.v); err != nil {
			errs = append(errs, fmt.Errorf("agent config: server.%s: %w", s.name, err))
		}
	}
	return errs
}

// applyGC passes the GC settings to the server (Validate checked them;
// zero keeps the server's defaults).
func (c *ServerConfig) applyGC(sc *server.Config) {
	sc.GCInterval, _ = positiveDuration(c.GCInterval)
	sc.JobGCThreshold, _ = positiveDuration(c.JobGCThreshold)
	sc.EvalGCThreshold, _ = positiveDuration(c.EvalGCThreshold)
	sc.NodeGCThreshold, _ = positiveDuration(c.NodeGCThreshold)
}

// mergeGC overlays o's set GC settings onto c.
func (c *ClientConfig) mergeGC(o *ClientConfig) {
	if o.GCInterval != "" {
		c.GCInterval = o.GCInterval
	}
	if o.GCMaxAllocs != 0 {
		c.GCMaxAllocs = o.GCMaxAllocs
	}
	if o.GCDiskUsageThreshold != 0 {
		c.GCDiskUsageThreshold = o.GCDiskUsageThreshold
	}
}

// validateGC checks gc_interval, gc_max_allocs and
// gc_disk_usage_threshold.
func (c *ClientConfig) validateGC() []error {
	var errs []error
	if _, err := positiveDuration(c.GCInterval); err != nil {
		errs = append(errs, fmt.Errorf("agent config: client.gc_interval: %w", err))
	}
	if c.GCMaxAllocs < 0 {
		errs = append(errs, fmt.Errorf("agent config: client.gc_max_allocs %d must not be negative", c.GCMaxAllocs))
	}
	if t := c.GCDiskUsageThreshold; t < 0 || t > 100 {
		errs = append(errs, fmt.Errorf("agent config: client.gc_disk_usage_threshold %g must be a percentage (0 to 100)", t))
	}
	return errs
}

// mustDuration parses a duration Validate accepted; "" is 0.
func mustDuration(v string) time.Duration {
	d, _ := positiveDuration(v)
	return d
}
