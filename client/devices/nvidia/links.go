package nvidia

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/droverhq/drover/structs"
)

// linkGPUs fills each GPU's link matrix, best effort: pairs whose
// connection NVML cannot tell get no entry.
//
// A pair is on NVLink when NVML reports NVLink peer-to-peer as OK (this
// covers NVSwitch boards, where an NVLink's remote end is the switch) or
// when one of the GPU's active NVLinks ends at the other GPU's PCI
// address. Otherwise the PCIe topology's closest common ancestor decides:
// a PCIe switch (or the same board), the host bridge or NUMA node, or the
// system interconnect.
func linkGPUs(gpus []*gpu) {
	peers := make([]map[string]bool, len(gpus))
	for i, g := range gpus {
		peers[i] = nvlinkPeers(g.dev)
	}
	for i, a := range gpus {
		for j, b := range gpus {
			if i == j {
				continue
			}
			l := linkBetween(a, b, peers[i], peers[j])
			if l == "" {
				continue
			}
			if a.instance.Links == nil {
				a.instance.Links = map[string]string{}
			}
			a.instance.Links[b.uuid] = l
		}
	}
}

func linkBetween(a, b *gpu, peersA, peersB map[string]bool) string {
	st, ret := call(func() (nvml.GpuP2PStatus, nvml.Return) {
		return a.dev.GetP2PStatus(b.dev, nvml.P2P_CAPS_INDEX_NVLINK)
	})
	if ret == nvml.SUCCESS && st == nvml.P2P_STATUS_OK {
		return structs.LinkNVLink
	}
	if b.busID != "" && peersA[normalizeBusID(b.busID)] {
		return structs.LinkNVLink
	}
	if a.busID != "" && peersB[normalizeBusID(a.busID)] {
		return structs.LinkNVLink
	}
	level, ret := call(func() (nvml.GpuTopologyLevel, nvml.Return) {
		return a.dev.GetTopologyCommonAncestor(b.dev)
	})
	if ret != nvml.SUCCESS {
		return ""
	}
	switch level {
	case nvml.TOPOLOGY_INTERNAL, nvml.TOPOLOGY_SINGLE, nvml.TOPOLOGY_MULTIPLE:
		return structs.LinkPCIeSwitch
	case nvml.TOPOLOGY_HOSTBRIDGE, nvml.TOPOLOGY_NODE:
		return structs.LinkHostBridge
	case nvml.TOPOLOGY_SYSTEM:
		return structs.LinkSystem
	}
	return ""
}

// nvlinkPeers returns the normalized PCI bus IDs at the far end of the
// device's active NVLinks.
func nvlinkPeers(dev nvml.Device) map[string]bool {
	peers := map[string]bool{}
	for link := 0; link < nvml.NVLINK_MAX_LINKS; link++ {
		state, ret := call(func() (nvml.EnableState, nvml.Return) { return dev.GetNvLinkState(link) })
		if unsupported(ret) || ret == nvml.ERROR_INVALID_ARGUMENT {
			break // no NVLink, or no more links
		}
		if ret != nvml.SUCCESS || state != nvml.FEATURE_ENABLED {
			continue
		}
		pci, ret := call(func() (nvml.PciInfo, nvml.Return) { return dev.GetNvLinkRemotePciInfo(link) })
		if ret != nvml.SUCCESS {
			continue
		}
		if id := busID(pci); id != "" {
			peers[normalizeBusID(id)] = true
		}
	}
	return peers
}
