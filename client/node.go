package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/uuid"

	"github.com/droverhq/drover/client/devices/nvidia"
	"github.com/droverhq/drover/client/devices/sharing"
	"github.com/droverhq/drover/client/devices/simulated"
	"github.com/droverhq/drover/client/fingerprint"
	"github.com/droverhq/drover/client/mps"
	"github.com/droverhq/drover/structs"
)

// Files under DataDir that keep the node's identity across restarts.
const (
	nodeIDFile   = "client-id"
	secretIDFile = "secret-id"
)

// DevGPUModel is what dev mode simulates when the host has no GPU.
var DevGPUModel = simulated.Config{
	Model:             "NVIDIA H100 80GB HBM3",
	MemoryBytes:       80 << 30,
	ComputeCapability: "9.0",
}

// buildNode fingerprints the host, its GPUs and the drivers into the
// node the client registers.
func (c *Client) buildNode(ctx context.Context) (*structs.Node, error) {
	id, err := persistentID(filepath.Join(c.cfg.DataDir, nodeIDFile))
	if err != nil {
		return nil, err
	}
	secret, err := persistentID(filepath.Join(c.cfg.DataDir, secretIDFile))
	if err != nil {
		return nil, err
	}
	host, err := fingerprint.Fingerprint(fingerprint.Config{Logger: c.logger})
	if err != nil {
		return nil, err
	}
	node := &structs.Node{
		ID:                    id,
		SecretID:              secret,
		Datacenter:            c.cfg.Datacenter,
		Name:                  c.cfg.Name,
		HTTPAddr:              c.cfg.HTTPAddr,
		NodeClass:             c.cfg.NodeClass,
		Attributes:            host.Attributes,
		Meta:                  maps.Clone(c.cfg.Meta),
		HostVolumes:           hostVolumes(c.cfg.HostVolumes),
		Drivers:               map[string]*structs.DriverInfo{},
		Status:                structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
		NodeResources: &structs.NodeResources{
			Cpu:    host.CPU,
			Memory: host.Memory,
		},
	}
	if node.Name == "" {
		node.Name = host.Attributes[fingerprint.AttrHostname]
	}
	if node.Attributes == nil {
		node.Attributes = map[string]string{}
	}
	maps.Copy(node.Attributes, c.cfg.Topology.Attributes())
	if node.Meta == nil {
		node.Meta = map[string]string{}
	}
	node.NodeResources.Devices = c.fingerprintGPUs(node.Name)
	if err := c.fingerprintNetwork(node); err != nil {
		return nil, err
	}
	if mb, ok := diskFreeMB(c.cfg.DataDir); ok {
		node.NodeResources.Disk.DiskMB = mb
	}
	for name, d := range c.drivers {
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		info := d.Fingerprint(fctx)
		cancel()
		node.Drivers[name] = info
		if info != nil && info.Detected && info.Healthy {
			node.Attributes["driver."+name] = "1"
		}
	}
	return node, nil
}

// fingerprintGPUs returns the host's NVIDIA GPUs, the configured
// simulated ones, and, in dev mode on a host with neither, DevGPUs
// simulated H100s.
func (c *Client) fingerprintGPUs(nodeName string) []*structs.NodeDeviceResource {
	lib := c.cfg.NVML
	if lib == nil {
		lib = nvml.New()
	}
	devices, err := nvidia.Fingerprint(lib, c.logger.Named("nvidia"))
	switch {
	case errors.Is(err, nvidia.ErrNoDriver):
		c.logger.Info("no NVIDIA driver found; 0 GPUs")
	case err != nil:
		c.logger.Warn("NVIDIA fingerprint; reporting 0 NVIDIA GPUs", "error", err)
	default:
		c.logger.Info("NVIDIA GPUs found", "count", countInstances(devices))
	}
	simCfgs := c.cfg.SimulatedGPUs
	if len(simCfgs) == 0 && countInstances(devices) == 0 && c.cfg.DevMode && c.cfg.DevGPUs > 0 {
		dev := DevGPUModel
		dev.Count = c.cfg.DevGPUs
		simCfgs = []simulated.Config{dev}
		c.logger.Info("dev mode: simulating GPUs", "count", dev.Count, "model", dev.Model)
	}
	if sim := simulated.Devices(nodeName, simCfgs...); len(sim) > 0 {
		c.logger.Info("simulated GPUs", "count", countInstances(sim))
		devices = append(devices, sim...)
	}
	// Label every GPU with how it may be shared (gpu_sharing).
	for _, w := range sharing.Apply(devices, c.cfg.GPUSharing, sharing.Host{MPS: mps.Available(c.cfg.MPSControl)}) {
		c.logger.Warn(w)
	}
	return devices
}

func countInstances(groups []*structs.NodeDeviceResource) int {
	n := 0
	for _, g := range groups {
		n += len(g.Instances)
	}
	return n
}

// persistentID reads a UUID from path, creating it on first use.
func persistentID(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if _, perr := uuid.Parse(id); perr != nil {
			return "", fmt.Errorf("%s holds %q, not a UUID: %w", path, id, perr)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read node identity: %w", err)
	}
	id := structs.GenerateUUID()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write node identity: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write node identity: %w", err)
	}
	return id, nil
}
