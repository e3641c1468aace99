package server

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/droverhq/drover/server/scheduler/frag"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// Pending reason classes: drover_allocations_pending{reason} sorts each
// task group's unplaced allocations of a blocked evaluation into one of
// these (never free text, so the label stays bounded), from the reasons
// its FailedTGAllocs record. The first that applies wins:
//
//	gang        the gang's groups would not all reach their min
//	quota       the namespace's quota refused placements that fit a node
//	queue       the fair-share queue held them back (at its max, or past its share)
//	gpu         nodes ran out of GPUs ("devices: ..."), or none has the device asked
//	cpu         nodes ran out of CPU
//	memory      nodes ran out of memory
//	constraint  every node was filtered (constraints, drivers, datacenters, readiness)
//	other       nothing recorded (no nodes at all, or an unknown dimension)
const (
	PendingGang       = "gang"
	PendingQuota      = "quota"
	PendingQueue      = "queue"
	PendingGPU        = "gpu"
	PendingCPU        = "cpu"
	PendingMemory     = "memory"
	PendingConstraint = "constraint"
	PendingOther      = "other"
)

// pendingReasons lists the classes, each exported (0 included) on every
// scrape so that sums and rates see no gaps.
var pendingReasons = []string{PendingGang, PendingQuota, PendingQueue, PendingGPU, PendingCPU, PendingMemory, PendingConstraint, PendingOther}

var (
	queueLabel    = []string{"queue"}
	quotaLabels   = []string{"quota", "resource"}
	queueWeight   = prometheus.NewDesc("drover_queue_weight", "A fair-share queue's weight.", queueLabel, nil)
	queueGuarant  = prometheus.NewDesc("drover_queue_guaranteed_gpus", "GPUs a queue is guaranteed while it asks for them.", queueLabel, nil)
	queueMax      = prometheus.NewDesc("drover_queue_max_gpus", "Most GPUs a queue may hold (0: unlimited).", queueLabel, nil)
	queueUsed     = prometheus.NewDesc("drover_queue_gpus_used", "GPUs a queue's live allocations hold (slices as their compute share).", queueLabel, nil)
	queueShare    = prometheus.NewDesc("drover_queue_fair_share_gpus", "A queue's fair share of the cluster's GPUs (0 while idle).", queueLabel, nil)
	queueWaiting  = prometheus.NewDesc("drover_queue_jobs_waiting", "Jobs of a queue with blocked evaluations.", queueLabel, nil)
	quotaUsed     = prometheus.NewDesc("drover_quota_used", "What the namespaces naming a quota hold together, by resource (cpu MHz, memory_mb, gpus, gpu_memory_mb).", quotaLabels, nil)
	quotaLimit    = prometheus.NewDesc("drover_quota_limit", "A quota's limit in this region, by resource; absent when unlimited, 0 when none is allowed.", quotaLabels, nil)
	quotaNSUsed   = prometheus.NewDesc("drover_quota_namespace_used", "What a namespace with a quota holds, by resource.", []string{"namespace", "quota", "resource"}, nil)
	gpuFrag       = prometheus.NewDesc("drover_gpu_fragmentation", "Expected fragmented GPU capacity in GPUs (the simulator's FGD measure, frag.Node, under the live allocations' GPU asks), by model.", modelLabel, nil)
	gpuFragRatio  = prometheus.NewDesc("drover_gpu_fragmentation_ratio", "Fragmented GPU capacity over all healthy GPUs of ready nodes (0 to 1), as the simulator reports it.", nil, nil)
	schedDescs    = []*prometheus.Desc{queueWeight, queueGuarant, queueMax, queueUsed, queueShare, queueWaiting, quotaUsed, quotaLimit, quotaNSUsed, gpuFrag, gpuFragRatio}
	quotaResNames = [4]string{"cpu", "memory_mb", "gpus", "gpu_memory_mb"}
)

// pendingReason classifies why a task group's placements failed (see the
// Pending* classes).
func pendingReason(m *structs.AllocMetric) string {
	switch {
	case m == nil:
		return PendingOther
	case m.Gang != "":
		return PendingGang
	case len(m.QuotaExhausted) > 0:
		return PendingQuota
	case m.Queue != "":
		return PendingQueue
	}
	if r := topReason(m.DimensionExhausted); r != "" {
		return dimensionClass(r)
	}
	if r := topReason(m.ConstraintFiltered); r != "" {
		if isDeviceReason(r) {
			return PendingGPU
		}
		return PendingConstraint
	}
	if m.NodesFiltered > 0 {
		return PendingConstraint
	}
	return PendingOther
}

// topReason is the reason counted most often (ties: the first by name),
// or "" for none.
func topReason(counts map[string]int) string {
	best, n := "", 0
	for r, c := range counts {
		if c > n || (c == n && r < best) {
			best, n = r, c
		}
	}
	return best
}

func isDeviceReason(r string) bool {
	return strings.HasPrefix(r, "devices") || strings.HasPrefix(r, "device ")
}

func dimensionClass(dim string) string {
	switch {
	case dim == "cpu":
		return PendingCPU
	case dim == "memory":
		return PendingMemory
	case isDeviceReason(dim):
		return PendingGPU
	}
	return PendingOther
}

// pendingByReason counts the allocations blocked evaluations could not
// place, by reason class.
func pendingByReason(evals []*structs.Evaluation) map[string]int {
	out := make(map[string]int, len(pendingReasons))
	for _, r := range pendingReasons {
		out[r] = 0
	}
	for _, e := range evals {
		if e.Status != structs.EvalStatusBlocked {
			continue
		}
		for tg, n := range e.QueuedAllocations {
			out[pendingReason(e.FailedTGAllocs[tg])] += n
		}
	}
	return out
}

// collectQueues exports every fair-share queue's settings, usage and
// fair share.
func (c clusterCollector) collectQueues(ch chan<- prometheus.Metric, st *state.StateStore) {
	qs, err := st.QueueStatuses(nil, "")
	if err != nil {
		c.s.logger.Warn("metrics: list queues", "error", err)
		return
	}
	for _, q := range qs {
		name := q.Queue.Name
		gaugeOf(ch, queueWeight, float64(q.Queue.Weight), name)
		gaugeOf(ch, queueGuarant, float64(q.Queue.GuaranteedGPUs), name)
		gaugeOf(ch, queueMax, float64(q.Queue.MaxGPUs), name)
		gaugeOf(ch, queueUsed, q.Usage.GPUs, name)
		gaugeOf(ch, queueShare, q.FairShare, name)
		gaugeOf(ch, queueWaiting, float64(q.Usage.Waiting), name)
	}
}

// quotaValues lays r out in quotaResNames' order, GPUs in GPUs.
func quotaValues(r structs.QuotaResources) [4]float64 {
	return [4]float64{float64(r.CPU), float64(r.MemoryMB), float64(r.GPUCompute) / structs.WholeGPU, float64(r.GPUMemoryMB)}
}

// collectQuotas exports each quota's usage and its limit in the server's
// region, and the usage of each namespace that names a quota.
func (c clusterCollector) collectQuotas(ch chan<- prometheus.Metric, st *state.StateStore) {
	specs, err := st.QuotaSpecs(nil, "")
	if err != nil {
		c.s.logger.Warn("metrics: list quotas", "error", err)
		return
	}
	for _, spec := range specs {
		u, err := st.QuotaUsage(nil, spec.Name)
		if err != nil || u == nil {
			continue
		}
		for i, v := range quotaValues(u.Used) {
			gaugeOf(ch, quotaUsed, v, spec.Name, quotaResNames[i])
		}
		if l := spec.LimitFor(c.s.config.Region); l != nil {
			limits := [4]int64{l.CPU, l.MemoryMB, l.GPUs, l.GPUMemoryMB}
			for i, v := range limits {
				if v != 0 {
					gaugeOf(ch, quotaLimit, float64(max(v, 0)), spec.Name, quotaResNames[i])
				}
			}
		}
		for _, ns := range u.Namespaces {
			used, err := st.NamespaceUsage(nil, ns)
			if err != nil {
				continue
			}
			for i, v := range quotaValues(used) {
				gaugeOf(ch, quotaNSUsed, v, ns, spec.Name, quotaResNames[i])
			}
		}
	}
}

// collectFragmentation exports the cluster's expected fragmented GPU
// capacity: frag.Node, the measure the simulator reports, over each
// ready node's free capacity (the store's usage table, walked once: each
// row holds its node) under the GPU asks of the live allocations (the
// workload the fragmentation-aware ranking expects). By model, each node
// counts once per model with only that model's GPUs.
func (c clusterCollector) collectFragmentation(ch chan<- prometheus.Metric, st *state.StateStore) {
	workload, err := st.GPUWorkload()
	if err != nil {
		c.s.logger.Warn("metrics: read GPU workload", "error", err)
		return
	}
	next, err := st.UsageFrom(state.IndexFreeGPUs, 0)
	if err != nil {
		c.s.logger.Warn("metrics: walk node usage", "error", err)
		return
	}
	f := fragmentation{workload: workload, byModel: map[string]float64{}}
	for use := next(); use != nil; use = next() {
		if n := use.Node; n.Ready() && n.NodeResources != nil {
			f.addNode(n, use)
		}
	}
	models := make([]string, 0, len(f.byModel))
	for m := range f.byModel {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		gaugeOf(ch, gpuFrag, f.byModel[m], m)
	}
	ratio := 0.0
	if f.gpus > 0 {
		ratio = f.total / float64(f.gpus)
	}
	gaugeOf(ch, gpuFragRatio, ratio)
}

// fragmentation sums frag.Node over nodes, in all and by model.
type fragmentation struct {
	workload frag.Workload
	byModel  map[string]float64
	total    float64
	gpus     int   // healthy GPUs counted
	scratch  []int // free compute of the node's GPUs, reused
}

// addNode counts n, whose allocations hold use.
func (f *fragmentation) addNode(n *structs.Node, use *structs.NodeUsage) {
	free := frag.NodeFree{
		CPU:      n.NodeResources.Cpu.CpuShares - use.CPU,
		MemoryMB: n.NodeResources.Memory.MemoryMB - use.MemoryMB,
	}
	f.scratch = f.scratch[:0]
	groups, last := 0, 0.0
	for _, g := range n.NodeResources.Devices {
		if g == nil || g.Type != "gpu" {
			continue
		}
		groups++
		start := len(f.scratch)
		for _, inst := range g.Instances {
			if inst == nil || !inst.Healthy {
				continue
			}
			f.scratch = append(f.scratch, use.Devices[inst.ID].FreeCompute())
		}
		last = 0
		if len(f.workload) > 0 {
			free.GPUs = f.scratch[start:]
			last = frag.Node(free, f.workload)
		}
		f.byModel[g.Name] += last
	}
	f.gpus += len(f.scratch)
	if groups > 1 && len(f.workload) > 0 {
		free.GPUs = f.scratch
		last = frag.Node(free, f.workload)
	}
	f.total += last // one group: the node's value is its model's
}
