package client

import (
	"github.com/droverhq/drover/client/allocrunner"
	"github.com/droverhq/drover/client/devices/sharing"
)

// gpuSharing is the alloc runners' view of how this node shares its GPUs:
// the sharing attribute fingerprinting set on each instance
// (client/devices/sharing) and the node's MPS daemons (client/mps).
type gpuSharing struct{ c *Client }

var _ allocrunner.GPUSharing = gpuSharing{}

// Mode implements allocrunner.GPUSharing.
func (s gpuSharing) Mode(deviceID string) (string, bool) {
	s.c.nodeMu.Lock()
	defer s.c.nodeMu.Unlock()
	g, inst := s.c.node.Instance(deviceID)
	if inst == nil {
		return "", false
	}
	return g.SharingMode(inst), sharing.Simulated(g)
}

// StartMPS implements allocrunner.GPUSharing.
func (s gpuSharing) StartMPS(gpu, holder string) (string, error) {
	return s.c.mps.Acquire(gpu, holder)
}

// StopMPS implements allocrunner.GPUSharing.
func (s gpuSharing) StopMPS(gpu, holder string) {
	if err := s.c.mps.Release(gpu, holder); err != nil {
		s.c.logger.Warn("stopping MPS daemon", "gpu", gpu, "error", err)
	}
}

// MPSPipeDir implements allocrunner.GPUSharing.
func (s gpuSharing) MPSPipeDir(gpu string) string { return s.c.mps.PipeDir(gpu) }
