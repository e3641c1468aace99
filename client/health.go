package client

import (
	"context"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/droverhq/drover/client/devices/nvidia"
	"github.com/droverhq/drover/client/devices/simulated"
	"github.com/droverhq/drover/structs"
)

// GPU health closes the loop between a failing GPU and its allocations:
//
//	NVML XID/ECC event ─┐                      ┌─> Node.Register (new NodeResources)
//	                     ├─> node copy updated ─┤      server: eval per job on the node
//	SetDeviceHealth ────┘   (c.node)            │      scheduler: stop allocs holding the
//	(simulated GPUs)                            │      GPU, place replacements elsewhere
//
// The client re-registers through the same path as at start-up
// (registerUntilDone), so the servers see the node's devices as the
// client does.

// startHealthWatcher follows NVML health events for the node's NVIDIA
// GPUs until ctx ends. Without NVIDIA GPUs, or without event support, it
// does nothing (and says so).
func (c *Client) startHealthWatcher(ctx context.Context) {
	if !hasNVMLGPUs(c.Node()) {
		return
	}
	lib := c.cfg.NVML
	if lib == nil {
		lib = nvml.New()
	}
	w, err := nvidia.StartWatcher(ctx, lib, nvidia.WatcherConfig{
		Logger: c.logger.Named("gpu_health"),
		OnChange: func(ch nvidia.HealthChange) {
			c.handleGPUHealth(ctx, ch)
		},
	})
	if err != nil {
		c.logger.Warn("GPU health is not watched", "error", err)
		return
	}
	c.loops.Add(1)
	go func() {
		defer c.loops.Done()
		<-ctx.Done()
		w.Stop()
	}()
}

// handleGPUHealth applies an NVML health change and re-registers the
// node, retrying until the servers have it or ctx ends.
func (c *Client) handleGPUHealth(ctx context.Context, ch nvidia.HealthChange) {
	changed, err := c.updateDeviceHealth(ch.UUID, ch.Healthy, ch.Reason, false)
	if err != nil {
		c.logger.Warn("GPU health change for an unknown GPU", "uuid", ch.UUID, "error", err)
		return
	}
	if changed {
		c.registerUntilDone(ctx)
	}
}

// SetDeviceHealth marks a simulated GPU unhealthy with reason (an
// injected fault such as "XID 79 (simulated)") or healthy again, and
// re-registers the node so the servers replace the allocations holding
// it. NVIDIA GPUs are driven by NVML events only: asking for one is an
// error wrapping structs.ErrInvalid; an unknown ID wraps
// structs.ErrNotFound. It gives up (with an error) when no server takes
// the registration within the RPC timeout; the node keeps the new health
// and sends it with its next registration.
func (c *Client) SetDeviceHealth(id string, healthy bool, reason string) error {
	if _, err := c.updateDeviceHealth(id, healthy, reason, true); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RPCTimeout)
	defer cancel()
	if _, ok := c.registerUntilDone(ctx); !ok {
		return fmt.Errorf("device %s: node update not delivered within %s", id, c.cfg.RPCTimeout)
	}
	return nil
}

// updateDeviceHealth sets the health of instance id, or of the MIG
// instances carved from GPU id, on a copy of the node that then replaces
// it. It reports whether anything changed.
func (c *Client) updateDeviceHealth(id string, healthy bool, reason string, simulatedOnly bool) (bool, error) {
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	node := c.node.Copy()
	if node.NodeResources == nil {
		return false, fmt.Errorf("device %s: %w", id, structs.ErrNotFound)
	}
	found, changed := false, false
	for _, g := range node.NodeResources.Devices {
		sim := g.Attributes[structs.DeviceAttrSimulated] == "true"
		for _, inst := range g.Instances {
			if inst.ID != id && inst.Attributes[nvidia.DeviceAttrMIGParent] != id {
				continue
			}
			if simulatedOnly && !sim {
				return false, fmt.Errorf("device %s is an NVIDIA GPU whose health NVML events drive: %w", id, structs.ErrInvalid)
			}
			found = true
			before := *inst
			if sim {
				simulated.SetHealth(inst, healthy, reason)
			} else {
				setNVMLHealth(inst, healthy, reason)
			}
			changed = changed || before.Healthy != inst.Healthy || before.HealthDescription != inst.HealthDescription
		}
	}
	if !found {
		return false, fmt.Errorf("device %s: %w", id, structs.ErrNotFound)
	}
	c.node = node
	if changed {
		c.logger.Info("GPU health changed", "id", id, "healthy", healthy, "reason", reason)
	}
	return changed, nil
}

func setNVMLHealth(inst *structs.NodeDevice, healthy bool, reason string) {
	inst.Healthy = healthy
	inst.HealthDescription = reason
	if inst.HealthDescription == "" {
		inst.HealthDescription = map[bool]string{true: "healthy", false: "unhealthy"}[healthy]
	}
}

// hasNVMLGPUs reports whether the node has GPUs that are not simulated.
func hasNVMLGPUs(n *structs.Node) bool {
	if n.NodeResources == nil {
		return false
	}
	for _, g := range n.NodeResources.Devices {
		if g.Vendor == nvidia.Vendor && g.Attributes[structs.DeviceAttrSimulated] != "true" && len(g.Instances) > 0 {
			return true
		}
	}
	return false
}
