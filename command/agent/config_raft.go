package agent

import (
	"fmt"
	"time"
)

// mergeRaftSnapshots overlays o's set Raft snapshot settings onto c.
func (c *ServerConfig) mergeRaftSnapshots(o *ServerConfig) {
	if o.RaftSnapshotThreshold != 0 {
		c.RaftSnapshotThreshold = o.RaftSnapshotThreshold
	}
	if o.RaftSnapshotInterval != "" {
		c.RaftSnapshotInterval = o.RaftSnapshotInterval
	}
	if o.RaftTrailingLogs != 0 {
		c.RaftTrailingLogs = o.RaftTrailingLogs
	}
}

// validateRaftSnapshots checks the Raft snapshot settings.
func (c *ServerConfig) validateRaftSnapshots() []error {
	var errs []error
	if c.RaftSnapshotThreshold < 0 {
		errs = append(errs, fmt.Errorf("agent config: server.raft_snapshot_threshold %d must not be negative", c.RaftSnapshotThreshold))
	}
	if c.RaftTrailingLogs < 0 {
		errs = append(errs, fmt.Errorf("agent config: server.raft_trailing_logs %d must not be negative", c.RaftTrailingLogs))
	}
	if _, err := c.raftSnapshotInterval(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// raftSnapshotInterval parses RaftSnapshotInterval; "" is 0, Raft's
// default.
func (c *ServerConfig) raftSnapshotInterval() (time.Duration, error) {
	if c.RaftSnapshotInterval == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(c.RaftSnapshotInterval)
	switch {
	case err != nil:
		return 0, fmt.Errorf("agent config: server.raft_snapshot_interval %q: %w", c.RaftSnapshotInterval, err)
	case d < 5*time.Millisecond:
		return 0, fmt.Errorf("agent config: server.raft_snapshot_interval %q: must be at least 5ms", c.RaftSnapshotInterval)
	}
	return d, nil
}
