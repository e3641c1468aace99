package client

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/droverhq/drover/structs"
	"github.com/droverhq/drover/telemetry"
)

// metricsCollector exports the node's metrics when scraped: every GPU
// under dcgm-exporter's names with the allocation holding it, and per
// allocation and per node what is asked (allocated) beside what is used.
// It reads the same stats as /v1/client/stats, at scrape time, so a
// finished allocation's series are gone at the next scrape.
type metricsCollector struct {
	c *Client

	// cpuMu guards lastCPU: host CPU use is measured between scrapes.
	cpuMu   sync.Mutex
	lastCPU cpuTimes
}

// MetricsCollector returns the client's Prometheus collector.
func (c *Client) MetricsCollector() prometheus.Collector {
	return &metricsCollector{c: c}
}

var (
	allocLabels = []string{"node_id", "namespace", "job", "task_group", "alloc_id"}
	nodeLabels  = []string{"node_id", "node_name"}

	allocCPUAsked = prometheus.NewDesc("drover_alloc_cpu_allocated_mhz", "CPU an allocation asked for (MHz).", allocLabels, nil)
	allocMemAsked = prometheus.NewDesc("drover_alloc_memory_allocated_bytes", "Memory an allocation asked for (bytes).", allocLabels, nil)
	allocGPUAsked = prometheus.NewDesc("drover_alloc_gpus_allocated", "GPUs an allocation holds, a slice counting as its compute share.", allocLabels, nil)
	allocGPUUsed  = prometheus.NewDesc("drover_alloc_gpus_used", "Sum of the utilisation of the GPUs an allocation holds, in GPUs (a shared GPU's whole utilisation counts).", allocLabels, nil)

	nodeCPUUsed    = prometheus.NewDesc("drover_node_cpu_used_percent", "Busy share of the host's CPUs since the previous scrape (percent).", nodeLabels, nil)
	nodeCPUTotal   = prometheus.NewDesc("drover_node_cpu_total_mhz", "CPU the node offers (MHz).", nodeLabels, nil)
	nodeCPUAsked   = prometheus.NewDesc("drover_node_cpu_allocated_mhz", "CPU the node's allocations asked for (MHz).", nodeLabels, nil)
	nodeMemUsed    = prometheus.NewDesc("drover_node_memory_used_bytes", "Host memory in use (total less available).", nodeLabels, nil)
	nodeMemTotal   = prometheus.NewDesc("drover_node_memory_total_bytes", "Host memory.", nodeLabels, nil)
	nodeMemAsked   = prometheus.NewDesc("drover_node_memory_allocated_bytes", "Memory the node's allocations asked for (bytes).", nodeLabels, nil)
	nodeGPUTotal   = prometheus.NewDesc("drover_node_gpus_total", "GPU instances the node reports.", nodeLabels, nil)
	nodeGPUAsked   = prometheus.NewDesc("drover_node_gpus_allocated", "GPU instances the node's allocations hold.", nodeLabels, nil)
	nodeGPUUsed    = prometheus.NewDesc("drover_node_gpus_used", "Sum of the node's GPUs' utilisation, in GPUs.", nodeLabels, nil)
	clientCollects = []*prometheus.Desc{
		allocCPUAsked, allocMemAsked, allocGPUAsked, allocGPUUsed,
		nodeCPUUsed, nodeCPUTotal, nodeCPUAsked, nodeMemUsed, nodeMemTotal, nodeMemAsked, nodeGPUTotal, nodeGPUAsked, nodeGPUUsed,
	}
)

// Describe implements prometheus.Collector.
func (m *metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	telemetry.DescribeGPUs(ch)
	for _, d := range clientCollects {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *metricsCollector) Collect(ch chan<- prometheus.Metric) {
	node := m.c.Node()
	allocs := m.c.liveAllocs()
	// One read of the GPUs' stats (an NVML session) per scrape.
	stats := map[string]*structs.DeviceStats{}
	util := map[string]float64{}
	for _, s := range m.c.deviceStats(node, nil) {
		stats[s.ID] = s
		util[s.ID] = s.GPUUtilPercent / 100
	}
	telemetry.CollectGPUs(ch, gpuSeries(node, allocs, stats))
	var cpuAsked, memAsked int64
	held := map[string]bool{}
	for _, a := range allocs {
		lv := []string{node.ID, a.Namespace, a.JobID, a.TaskGroup, a.ID}
		cpu, memMB := a.Comparable()
		cpuAsked += cpu
		memAsked += memMB
		asked, used := 0.0, 0.0
		for _, d := range allocDevices(a) {
			for _, id := range d.DeviceIDs {
				held[id] = true
				used += util[id]
				if d.Slice() {
					asked += float64(d.Compute) / 100
				} else {
					asked++
				}
			}
		}
		gauge(ch, allocCPUAsked, float64(cpu), lv)
		gauge(ch, allocMemAsked, float64(memMB)*(1<<20), lv)
		gauge(ch, allocGPUAsked, asked, lv)
		gauge(ch, allocGPUUsed, used, lv)
	}
	lv := []string{node.ID, node.Name}
	total, used := 0, 0.0
	if nr := node.NodeResources; nr != nil {
		gauge(ch, nodeCPUTotal, float64(nr.Cpu.CpuShares), lv)
		for _, g := range nr.Devices {
			for _, inst := range g.Instances {
				total++
				used += util[inst.ID]
			}
		}
	}
	gauge(ch, nodeCPUAsked, float64(cpuAsked), lv)
	gauge(ch, nodeMemAsked, float64(memAsked)*(1<<20), lv)
	gauge(ch, nodeGPUTotal, float64(total), lv)
	gauge(ch, nodeGPUAsked, float64(len(held)), lv)
	gauge(ch, nodeGPUUsed, used, lv)
	m.collectHost(ch, lv)
}

// collectHost exports host CPU use since the previous scrape and memory
// use; a host whose /proc cannot be read exports neither.
func (m *metricsCollector) collectHost(ch chan<- prometheus.Metric, lv []string) {
	now, err := readCPUTimes("/proc/stat")
	if err == nil {
		m.cpuMu.Lock()
		before := m.lastCPU
		m.lastCPU = now
		m.cpuMu.Unlock()
		gauge(ch, nodeCPUUsed, cpuPercent(before, now), lv)
	}
	if src, err := os.ReadFile("/proc/meminfo"); err == nil {
		if total, used, err := parseMemInfo(string(src)); err == nil {
			gauge(ch, nodeMemUsed, float64(used), lv)
			gauge(ch, nodeMemTotal, float64(total), lv)
		}
	}
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, lv []string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
}

// liveAllocs returns the allocations this client runs that have not
// finished.
func (c *Client) liveAllocs() []*structs.Allocation {
	c.allocMu.Lock()
	runners := make([]*runner, 0, len(c.runners))
	for _, r := range c.runners {
		runners = append(runners, r)
	}
	c.allocMu.Unlock()
	out := make([]*structs.Allocation, 0, len(runners))
	for _, r := range runners {
		if a := r.ar.Alloc(); a != nil && !a.ClientTerminalStatus() {
			out = append(out, a)
		}
	}
	return out
}

// allocDevices returns an allocation's devices with the task holding
// each, in task order.
func allocDevices(a *structs.Allocation) []*structs.AllocatedDeviceResource {
	var out []*structs.AllocatedDeviceResource
	for _, h := range deviceHolders(a) {
		out = append(out, h.dev)
	}
	return out
}

// holder is a task of an allocation holding a device.
type holder struct {
	alloc *structs.Allocation
	task  string
	dev   *structs.AllocatedDeviceResource
}

// deviceHolders lists an allocation's tasks' devices, tasks sorted by
// name.
func deviceHolders(a *structs.Allocation) []holder {
	if a.AllocatedResources == nil {
		return nil
	}
	names := make([]string, 0, len(a.AllocatedResources.Tasks))
	for name := range a.AllocatedResources.Tasks {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []holder
	for _, name := range names {
		for _, d := range a.AllocatedResources.Tasks[name].Devices {
			out = append(out, holder{alloc: a, task: name, dev: d})
		}
	}
	return out
}

// gpuSeries lists every GPU instance of the node, once per allocation
// task holding it (once alone when none does), with its stats.
func gpuSeries(node *structs.Node, allocs []*structs.Allocation, stats map[string]*structs.DeviceStats) []telemetry.GPU {
	if node.NodeResources == nil {
		return nil
	}
	holders := map[string][]holder{}
	for _, a := range allocs {
		for _, h := range deviceHolders(a) {
			for _, id := range h.dev.DeviceIDs {
				holders[id] = append(holders[id], h)
			}
		}
	}
	var out []telemetry.GPU
	index := 0
	for _, g := range node.NodeResources.Devices {
		if g.Type != "gpu" {
			continue
		}
		for _, inst := range g.Instances {
			base := gpuBase(node, g, inst, index, stats[inst.ID])
			index++
			if len(holders[inst.ID]) == 0 {
				out = append(out, base)
				continue
			}
			for _, h := range holders[inst.ID] {
				s := base
				s.Namespace, s.Job, s.TaskGroup, s.AllocID, s.Task = h.alloc.Namespace, h.alloc.JobID, h.alloc.TaskGroup, h.alloc.ID, h.task
				if h.dev.Slice() {
					s.Sharing = g.SharingMode(inst)
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// gpuBase is one GPU's series without allocation labels.
func gpuBase(node *structs.Node, g *structs.NodeDeviceResource, inst *structs.NodeDevice, index int, s *structs.DeviceStats) telemetry.GPU {
	out := telemetry.GPU{
		Index: index, UUID: inst.ID, Device: "nvidia" + strconv.Itoa(index), ModelName: g.Name,
		Hostname: node.Name, NodeID: node.ID,
		Simulated: g.Attributes[structs.DeviceAttrSimulated] == "true",
		LastXID:   lastXID(inst),
	}
	if inst.Locality != nil {
		out.PCIBusID = inst.Locality.PciBusID
	}
	if s == nil {
		return out
	}
	const mib = 1 << 20
	out.UtilPercent = s.GPUUtilPercent
	out.MemCopyUtilPercent = s.MemoryUtilPercent
	out.FBUsedMiB = float64(s.MemoryUsedBytes) / mib
	if s.MemoryTotalBytes >= s.MemoryUsedBytes {
		out.FBFreeMiB = float64(s.MemoryTotalBytes-s.MemoryUsedBytes) / mib
	}
	out.PowerWatts = s.PowerWatts
	out.TempC = s.TemperatureC
	out.SMClockMHz = s.SMClockMHz
	out.ECCDBEVolatile = float64(s.ECCDBEVolatile)
	return out
}

// lastXID reads the XID an unhealthy GPU's health description names
// ("XID 79: fallen off the bus"), 0 for none.
func lastXID(inst *structs.NodeDevice) float64 {
	if inst.Healthy {
		return 0
	}
	var xid uint64
	if _, err := fmt.Sscanf(inst.HealthDescription, "XID %d:", &xid); err != nil {
		return 0
	}
	return float64(xid)
}
