package agent

import (
	"fmt"

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
