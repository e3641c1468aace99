package client

import "github.com/droverhq/drover/structs"

// hostVolumes is the node's copy of the host volumes the client offers
// (nil without any), names filled in.
func hostVolumes(in map[string]*structs.ClientHostVolumeConfig) map[string]*structs.ClientHostVolumeConfig {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]*structs.ClientHostVolumeConfig, len(in))
	for name, v := range in {
		if v == nil {
			continue
		}
		out[name] = &structs.ClientHostVolumeConfig{Name: name, Path: v.Path, ReadOnly: v.ReadOnly}
	}
	return out
}

// previousDoneLocked is closed when the allocation a replaces has ended
// on this client; nil when this client does not run it. Called with
// c.mu held.
func (c *Client) previousDoneLocked(a *structs.Allocation) <-chan struct{} {
	if r := c.runners[a.PreviousAllocation]; r != nil && a.PreviousAllocation != "" {
		return r.ar.WaitCh()
	}
	return nil
}
