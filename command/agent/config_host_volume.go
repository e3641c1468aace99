package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/droverhq/drover/structs"
)

// HostVolumeConfig is one of the client's host_volume blocks (Nomad's):
// a host directory jobs may mount by name through a group's volume
// block:
//
//	client {
//	  host_volume "data" {
//	    path      = "/srv/data"
//	    read_only = false
//	  }
//	}
type HostVolumeConfig struct {
	Name     string `hcl:"name,label"`
	Path     string `hcl:"path"`
	ReadOnly bool   `hcl:"read_only,optional"`
}

// maxHostVolumes bounds the host_volume blocks of one client.
const maxHostVolumes = 256

var hostVolumeNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$`)

// mergeHostVolumes: a later file's host volumes replace earlier ones of
// the same name.
func (c *ClientConfig) mergeHostVolumes(o *ClientConfig) {
	for _, v := range o.HostVolumes {
		replaced := false
		for i, cur := range c.HostVolumes {
			if cur.Name == v.Name {
				c.HostVolumes[i], replaced = v, true
			}
		}
		if !replaced {
			c.HostVolumes = append(c.HostVolumes, v)
		}
	}
}

// validateHostVolumes checks each host volume: a name, an absolute path
// to a directory that exists.
func (c *ClientConfig) validateHostVolumes() []error {
	var errs []error
	if len(c.HostVolumes) > maxHostVolumes {
		return []error{fmt.Errorf("agent config: client: %d host_volume blocks, at most %d", len(c.HostVolumes), maxHostVolumes)}
	}
	for _, v := range c.HostVolumes {
		where := fmt.Sprintf("agent config: client.host_volume %q", v.Name)
		if !hostVolumeNameRe.MatchString(v.Name) {
			errs = append(errs, fmt.Errorf("%s: the name must be 1-128 letters, digits, '_', '-' or '.'", where))
			continue
		}
		if !filepath.IsAbs(v.Path) {
			errs = append(errs, fmt.Errorf("%s: path %q must be absolute", where, v.Path))
			continue
		}
		fi, err := os.Stat(v.Path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			errs = append(errs, fmt.Errorf("%s: path %s does not exist", where, v.Path))
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: path: %w", where, err))
		case !fi.IsDir():
			errs = append(errs, fmt.Errorf("%s: path %s is not a directory", where, v.Path))
		}
	}
	return errs
}

// hostVolumes is what the client offers, by name.
func (c *ClientConfig) hostVolumes() map[string]*structs.ClientHostVolumeConfig {
	if len(c.HostVolumes) == 0 {
		return nil
	}
	out := make(map[string]*structs.ClientHostVolumeConfig, len(c.HostVolumes))
	for _, v := range c.HostVolumes {
		out[v.Name] = &structs.ClientHostVolumeConfig{Name: v.Name, Path: filepath.Clean(v.Path), ReadOnly: v.ReadOnly}
	}
	return out
}
