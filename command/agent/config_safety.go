package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"

	"github.com/droverhq/drover/client"
	"github.com/droverhq/drover/drivers/docker"
)

// What a task may do to its host, in Nomad's config shapes: driver
// plugin blocks (raw_exec off, docker without host volumes, privileges
// or the host network), the client's user policy and the exec driver's
// chroot.
//
//	plugin "raw_exec" {
//	  config {
//	    enabled = true
//	  }
//	}
//	plugin "docker" {
//	  config {
//	    allow_privileged   = false
//	    allow_host_network = false   # Drover's: Nomad has no such switch
//	    volumes {
//	      enabled = false
//	    }
//	  }
//	}
//	client {
//	  user {
//	    denylist        = ["root", "Administrator"]
//	    allowlist       = []          # not empty: the only users a task may name
//	    checked_drivers = ["exec", "raw_exec"]
//	  }
//	  chroot_env = { "/bin" = "/bin", "/usr" = "/usr" }   # replaces the default
//	}

// PluginConfig is one `plugin "<name>" { config { ... } }` block; its
// body is decoded per driver (pluginBodies).
type PluginConfig struct {
	Name   string   `hcl:"name,label"`
	Remain hcl.Body `hcl:",remain"`
}

// Plugins holds what the plugin blocks set. A nil field was not set and
// takes its default (or the value of an earlier file when merged).
type Plugins struct {
	RawExec RawExecPluginConfig
	Docker  DockerPluginConfig
}

// RawExecPluginConfig is plugin "raw_exec" { config { ... } }.
type RawExecPluginConfig struct {
	// Enabled turns the raw_exec driver on; off by default, on in -dev.
	Enabled *bool `hcl:"enabled,optional"`
}

// DockerPluginConfig is plugin "docker" { config { ... } }.
type DockerPluginConfig struct {
	AllowPrivileged  *bool                `hcl:"allow_privileged,optional"`
	AllowHostNetwork *bool                `hcl:"allow_host_network,optional"`
	Volumes          *DockerVolumesConfig `hcl:"volumes,block"`
}

// DockerVolumesConfig is the docker plugin's volumes block.
type DockerVolumesConfig struct {
	Enabled *bool `hcl:"enabled,optional"`
}

// UserConfig is the client's user block (client.UserPolicy). A list
// left out takes its default; an empty list turns that part off.
type UserConfig struct {
	Denylist       []string `hcl:"denylist,optional"`
	Allowlist      []string `hcl:"allowlist,optional"`
	CheckedDrivers []string `hcl:"checked_drivers,optional"`
}

// knownPlugins are the plugin names a config may configure.
var knownPlugins = []string{"docker", "raw_exec"}

// decodePlugins reads the plugin blocks of one file.
func decodePlugins(blocks []*PluginConfig) (Plugins, error) {
	var out Plugins
	seen := map[string]bool{}
	var errs []error
	for _, b := range blocks {
		at := b.Remain.MissingItemRange()
		pos := fmt.Sprintf("%s:%d,%d", at.Filename, at.Start.Line, at.Start.Column)
		if seen[b.Name] {
			errs = append(errs, fmt.Errorf("%s: plugin %q: configured twice in one file", pos, b.Name))
			continue
		}
		seen[b.Name] = true
		var diags hcl.Diagnostics
		switch b.Name {
		case "raw_exec":
			var body struct {
				Config *RawExecPluginConfig `hcl:"config,block"`
			}
			if diags = gohcl.DecodeBody(b.Remain, nil, &body); !diags.HasErrors() && body.Config != nil {
				out.RawExec = *body.Config
			}
		case "docker":
			var body struct {
				Config *DockerPluginConfig `hcl:"config,block"`
			}
			if diags = gohcl.DecodeBody(b.Remain, nil, &body); !diags.HasErrors() && body.Config != nil {
				out.Docker = *body.Config
			}
		default:
			errs = append(errs, fmt.Errorf("%s: plugin %q: unknown plugin; Drover configures %s", pos, b.Name, strings.Join(knownPlugins, ", ")))
			continue
		}
		if diags.HasErrors() {
			errs = append(errs, diagError(diags))
		}
	}
	return out, errors.Join(errs...)
}

// merge overlays what o sets.
func (p *Plugins) merge(o Plugins) {
	setBool(&p.RawExec.Enabled, o.RawExec.Enabled)
	setBool(&p.Docker.AllowPrivileged, o.Docker.AllowPrivileged)
	setBool(&p.Docker.AllowHostNetwork, o.Docker.AllowHostNetwork)
	if o.Docker.Volumes != nil {
		if p.Docker.Volumes == nil {
			p.Docker.Volumes = &DockerVolumesConfig{}
		}
		setBool(&p.Docker.Volumes.Enabled, o.Docker.Volumes.Enabled)
	}
}

func setBool(dst **bool, v *bool) {
	if v != nil {
		b := *v
		*dst = &b
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

// rawExecEnabled reports whether the raw_exec driver runs tasks.
func (p *Plugins) rawExecEnabled() bool { return isTrue(p.RawExec.Enabled) }

// dockerConfig is the docker driver's config with what the plugin
// block allows.
func (c *Config) dockerConfig() docker.Config {
	d := c.Plugins.Docker
	cfg := docker.Config{
		Endpoint:         c.Client.DockerEndpoint,
		UseCDI:           c.Client.DockerUseCDI,
		AllowPrivileged:  isTrue(d.AllowPrivileged),
		AllowHostNetwork: isTrue(d.AllowHostNetwork),
	}
	if d.Volumes != nil {
		cfg.AllowVolumes = isTrue(d.Volumes.Enabled)
	}
	return cfg
}

// userPolicy is the client's user block as the alloc runner takes it.
func (u *UserConfig) userPolicy() client.UserPolicy {
	if u == nil {
		return client.UserPolicy{}
	}
	return client.UserPolicy{Denylist: u.Denylist, Allowlist: u.Allowlist, CheckedDrivers: u.CheckedDrivers}
}

// mergeSafety overlays the client's user block and chroot_env.
func (c *ClientConfig) mergeSafety(o *ClientConfig) {
	if o.User != nil {
		if c.User == nil {
			c.User = &UserConfig{}
		}
		if o.User.Denylist != nil {
			c.User.Denylist = o.User.Denylist
		}
		if o.User.Allowlist != nil {
			c.User.Allowlist = o.User.Allowlist
		}
		if o.User.CheckedDrivers != nil {
			c.User.CheckedDrivers = o.User.CheckedDrivers
		}
	}
	if o.ChrootEnv != nil {
		c.ChrootEnv = o.ChrootEnv
	}
}

// validateSafety checks the user block and chroot_env.
func (c *ClientConfig) validateSafety() []error {
	var errs []error
	if u := c.User; u != nil {
		for _, d := range u.CheckedDrivers {
			if !slices.Contains([]string{"exec", "raw_exec", "docker"}, d) {
				errs = append(errs, fmt.Errorf("agent config: client.user.checked_drivers: unknown driver %q", d))
			}
		}
	}
	for src, dst := range c.ChrootEnv {
		switch {
		case !filepath.IsAbs(src) || filepath.Clean(src) != src:
			errs = append(errs, fmt.Errorf("agent config: client.chroot_env[%q]: the host path must be absolute and clean", src))
		case !filepath.IsAbs(dst) || filepath.Clean(dst) != dst || dst == "/":
			errs = append(errs, fmt.Errorf("agent config: client.chroot_env[%q] = %q: the task path must be absolute, clean and not /", src, dst))
		}
	}
	return errs
}
