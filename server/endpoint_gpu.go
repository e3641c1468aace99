package server

import (
	"sort"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// gpuEndpoint serves the "GPU" RPC methods: the cluster's GPUs at a
// glance.
type gpuEndpoint struct{ srv *Server }

// Summary counts the cluster's GPU instances by model and by node; its
// index is the higher of the nodes' and allocations' tables.
func (e *gpuEndpoint) Summary(args *structs.GenericRequest, reply *structs.GPUSummaryResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCGPUSummary, &err)
	if done, err := s.forward(structs.RPCGPUSummary, args, reply); done {
		return err
	}
	if _, err := s.authorize(args.AuthToken, (*acl.ACL).AllowNodeRead); err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		nodes, err := st.Nodes(ws)
		if err != nil {
			return 0, err
		}
		held, err := heldGPUs(ws, st)
		if err != nil {
			return 0, err
		}
		reply.Summary = summarizeGPUs(nodes, held)
		return tablesIndex(st, []string{state.TableNodes, state.TableAllocs})
	})
}

// heldGPUs returns the device IDs held by non-terminal allocations.
func heldGPUs(ws memdb.WatchSet, st *state.StateStore) (map[string]bool, error) {
	allocs, err := st.Allocs(ws, "*")
	if err != nil {
		return nil, err
	}
	held := map[string]bool{}
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		for _, id := range a.DeviceIDs() {
			held[id] = true
		}
	}
	return held, nil
}

// summarizeGPUs counts GPU instances by model and node. A GPU that is
// held and unhealthy counts as allocated and unhealthy, not free; a
// healthy one that is not held counts as free only on a ready node.
func summarizeGPUs(nodes []*structs.Node, held map[string]bool) *structs.GPUSummary {
	sum := &structs.GPUSummary{Models: []*structs.GPUModelSummary{}, Nodes: make([]*structs.GPUNodeSummary, 0, len(nodes))}
	models := map[string]*structs.GPUModelSummary{}
	for _, n := range nodes {
		ns := &structs.GPUNodeSummary{ID: n.ID, Name: n.Name, Datacenter: n.Datacenter, Status: n.Status}
		if n.NodeResources != nil {
			for _, g := range n.NodeResources.Devices {
				if g.Type != "gpu" {
					continue
				}
				m := models[g.ID()]
				if m == nil {
					mem, _ := structs.ParseBytes(g.Attributes[structs.DeviceAttrMemory])
					m = &structs.GPUModelSummary{Vendor: g.Vendor, Type: g.Type, Model: g.Name, MemoryBytes: mem}
					models[g.ID()] = m
					sum.Models = append(sum.Models, m)
				}
				countGPUs(m, ns, g.Instances, held, n.Status == structs.NodeStatusReady)
			}
		}
		sum.Nodes = append(sum.Nodes, ns)
	}
	for _, m := range sum.Models {
		sum.Total += m.Total
		sum.Allocated += m.Allocated
		sum.Free += m.Free
		sum.Unhealthy += m.Unhealthy
	}
	sort.Slice(sum.Models, func(i, j int) bool { return sum.Models[i].Model < sum.Models[j].Model })
	return sum
}

// countGPUs adds a device group's instances to its model's and its
// node's counts.
func countGPUs(m *structs.GPUModelSummary, ns *structs.GPUNodeSummary, instances []*structs.NodeDevice, held map[string]bool, ready bool) {
	for _, inst := range instances {
		m.Total++
		ns.GPUs++
		switch {
		case held[inst.ID]:
			m.Allocated++
			ns.Allocated++
		case inst.Healthy && ready:
			m.Free++
		}
		if !inst.Healthy {
			m.Unhealthy++
			ns.Unhealthy++
		}
	}
}
