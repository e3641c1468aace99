package agent

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/droverhq/drover/server"
)

// ServerJoinConfig is the server_join block: the serf addresses
// ("host:port", or "host" for the serf port 4648) of other servers, tried
// every RetryInterval until one join succeeds (RetryMax attempts, 0: no
// limit), as in Nomad.
type ServerJoinConfig struct {
	RetryJoin     []string `hcl:"retry_join,optional"`
	RetryInterval string   `hcl:"retry_interval,optional"`
	RetryMax      int      `hcl:"retry_max,optional"`
}

// mergeCluster overlays o's set cluster settings onto c.
func (c *ServerConfig) mergeCluster(o *ServerConfig) {
	if o.DeadServerTimeout != "" {
		c.DeadServerTimeout = o.DeadServerTimeout
	}
	j := o.ServerJoin
	if j == nil {
		return
	}
	if c.ServerJoin == nil {
		c.ServerJoin = &ServerJoinConfig{}
	}
	if len(j.RetryJoin) > 0 {
		c.ServerJoin.RetryJoin = j.RetryJoin
	}
	if j.RetryInterval != "" {
		c.ServerJoin.RetryInterval = j.RetryInterval
	}
	if j.RetryMax != 0 {
		c.ServerJoin.RetryMax = j.RetryMax
	}
}

// validateCluster checks bootstrap_expect, server_join and
// dead_server_timeout.
func (c *Config) validateCluster() []error {
	s := c.Server
	var errs []error
	switch {
	case s.BootstrapExpect < 0:
		errs = append(errs, fmt.Errorf("agent config: server.bootstrap_expect %d must not be negative", s.BootstrapExpect))
	case c.DevMode && s.BootstrapExpect > 1:
		errs = append(errs, fmt.Errorf("agent config: server.bootstrap_expect = %d: -dev runs a single server; leave it at 1", s.BootstrapExpect))
	}
	if j := s.ServerJoin; j != nil {
		for _, addr := range j.RetryJoin {
			if strings.TrimSpace(addr) == "" {
				errs = append(errs, fmt.Errorf("agent config: server.server_join.retry_join has an empty address"))
			}
		}
		if _, err := positiveDuration(j.RetryInterval); err != nil {
			errs = append(errs, fmt.Errorf("agent config: server.server_join.retry_interval: %w", err))
		}
		if j.RetryMax < 0 {
			errs = append(errs, fmt.Errorf("agent config: server.server_join.retry_max %d must not be negative", j.RetryMax))
		}
	}
	if _, err := positiveDuration(s.DeadServerTimeout); err != nil {
		errs = append(errs, fmt.Errorf("agent config: server.dead_server_timeout: %w", err))
	}
	return errs
}

// positiveDuration parses a duration setting; "" is 0 (the default).
func positiveDuration(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (like \"30s\" or \"5m\")", v)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be positive", v)
	}
	return d, nil
}

// retryJoin returns the server_join addresses, or nil.
func (c *ServerConfig) retryJoin() []string {
	if c.ServerJoin == nil {
		return nil
	}
	return c.ServerJoin.RetryJoin
}

// bootstrapExpect is the server's BootstrapExpect: as configured, or,
// when unset, 1 (a lone server) unless the server is told to join others,
// then 0 (it joins their cluster and never bootstraps).
func (c *ServerConfig) bootstrapExpect() int {
	switch {
	case c.BootstrapExpect > 0:
		return c.BootstrapExpect
	case len(c.retryJoin()) > 0:
		return 0
	}
	return 1
}

// applyCluster sets the server's serf address and its join and dead
// server settings (Validate checked them).
func (c *Config) applyCluster(sc *server.Config) error {
	serfAddr, err := net.ResolveTCPAddr("tcp", c.addr(c.Ports.Serf))
	if err != nil {
		return fmt.Errorf("serf address: %w", err)
	}
	sc.SerfAddr = serfAddr
	sc.DeadServerTimeout, _ = positiveDuration(c.Server.DeadServerTimeout)
	if j := c.Server.ServerJoin; j != nil {
		sc.RetryJoin = j.RetryJoin
		sc.RetryJoinInterval, _ = positiveDuration(j.RetryInterval)
		sc.RetryJoinMaxAttempts = j.RetryMax
	}
	return nil
}
