package agent

import (
	"net/http"
	"sort"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
	"github.com/hashicorp/go-memdb"
)

// GPUSummary is the cluster's GPUs at a glance (GET /v1/gpus): counts by
// model and per node, so the UI draws the overview and its heat map from
// one request however many nodes there are.
type GPUSummary struct {
	Total, Allocated, Free, Unhealthy int
	Models                            []*GPUModelSummary
	Nodes                             []*GPUNodeSummary
}

// GPUModelSummary counts one model's GPUs across the cluster.
type GPUModelSummary struct {
	Vendor, Type, Model string
	MemoryBytes         uint64
	Total, Allocated    int
	Free, Unhealthy     int
}

// GPUNodeSummary counts one node's GPUs.
type GPUNodeSummary struct {
	ID, Name, Datacenter, Status string
	GPUs, Allocated, Unhealthy   int
}

func (h *httpAPI) gpus(w http.ResponseWriter, r *http.Request) (any, error) {
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, _ structs.QueryOptions) (any, uint64, error) {
		nodes, err := s.Nodes(ws)
		if err != nil {
			return nil, 0, err
		}
		held, err := heldGPUs(ws, s)
		if err != nil {
			return nil, 0, err
		}
		idx, err := tableIndex(s, "nodes", "allocs")
		return summarizeGPUs(nodes, held), idx, err
	})
}

// heldGPUs returns the device IDs held by non-terminal allocations.
func heldGPUs(ws memdb.WatchSet, s *state.StateStore) (map[string]bool, error) {
	allocs, err := s.Allocs(ws, "*")
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
// held and unhealthy counts as allocated and unhealthy, not free.
func summarizeGPUs(nodes []*structs.Node, held map[string]bool) *GPUSummary {
	sum := &GPUSummary{Models: []*GPUModelSummary{}, Nodes: make([]*GPUNodeSummary, 0, len(nodes))}
	models := map[string]*GPUModelSummary{}
	for _, n := range nodes {
		ns := &GPUNodeSummary{ID: n.ID, Name: n.Name, Datacenter: n.Datacenter, Status: n.Status}
		if n.NodeResources != nil {
			for _, g := range n.NodeResources.Devices {
				if g.Type != "gpu" {
					continue
				}
				m := models[g.ID()]
				if m == nil {
					mem, _ := structs.ParseBytes(g.Attributes[structs.DeviceAttrMemory])
					m = &GPUModelSummary{Vendor: g.Vendor, Type: g.Type, Model: g.Name, MemoryBytes: mem}
					models[g.ID()] = m
					sum.Models = append(sum.Models, m)
				}
				for _, inst := range g.Instances {
					m.Total++
					ns.GPUs++
					switch {
					case held[inst.ID]:
						m.Allocated++
						ns.Allocated++
					case inst.Healthy && n.Status == structs.NodeStatusReady:
						m.Free++
					}
					if !inst.Healthy {
						m.Unhealthy++
						ns.Unhealthy++
					}
				}
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

// jobScaleBody is Nomad's ScalingRequest.
type jobScaleBody struct {
	Count  *int
	Target map[string]string
}

func (h *httpAPI) jobScale(w http.ResponseWriter, r *http.Request) (any, error) {
	var body jobScaleBody
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	if body.Count == nil || *body.Count < 0 {
		return nil, errorf(http.StatusBadRequest, "scale: Count must be given and not negative")
	}
	group := body.Target["Group"]
	if group == "" {
		return nil, errorf(http.StatusBadRequest, "scale: Target.Group is required")
	}
	st := h.b.State()
	if st == nil {
		return nil, errorf(http.StatusNotImplemented, "this agent runs no server")
	}
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	cur, err := st.JobByID(nil, o.Namespace, id)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, errorf(http.StatusNotFound, "job %q not found", id)
	}
	job := cur.Copy()
	tg := job.LookupTaskGroup(group)
	if tg == nil {
		return nil, errorf(http.StatusBadRequest, "scale: job %q has no group %q", id, group)
	}
	tg.Count = *body.Count
	job.Stop = false
	req := &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{Region: job.Region, Namespace: job.Namespace}}
	var resp structs.JobRegisterResponse
	if err := h.b.RPC(structs.RPCJobRegister, req, &resp); err != nil {
		return nil, err
	}
	h.setMeta(w, resp.Index)
	return &resp, nil
}

func (h *httpAPI) regions(w http.ResponseWriter, r *http.Request) (any, error) {
	region, _ := h.b.Self()["config"].(map[string]any)["Region"].(string)
	if region == "" {
		region = "global"
	}
	return []string{region}, nil
}
