package telemetry

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// GPU is one GPU as a scrape sees it: its figures and the label values
// of its series. A GPU that allocations share (slices) is one GPU value
// per holder, differing in the allocation labels; a GPU no allocation
// holds leaves them empty (Prometheus drops empty labels).
type GPU struct {
	// dcgm-exporter's labels.
	Index     int    // gpu: the GPU's index on its node
	UUID      string // UUID
	Device    string // device: "nvidia0"
	ModelName string // modelName
	PCIBusID  string // pci_bus_id
	Hostname  string // Hostname: the node's name
	// Drover's labels: the node, and the allocation that holds the GPU.
	NodeID    string
	Namespace string
	Job       string
	TaskGroup string
	AllocID   string
	Task      string
	// Sharing is the sharing mode of a slice ("mps", "timeslice", ...),
	// empty for a whole GPU.
	Sharing   string
	Simulated bool

	// Figures, in dcgm-exporter's units.
	UtilPercent        float64
	MemCopyUtilPercent float64
	FBUsedMiB          float64
	FBFreeMiB          float64
	PowerWatts         float64
	TempC              float64
	SMClockMHz         float64
	// LastXID is the last XID error seen (0: none).
	LastXID float64
	// ECCDBEVolatile counts double-bit volatile ECC errors.
	ECCDBEVolatile float64
}

// GPULabels are the labels of every GPU series, in order.
var GPULabels = []string{
	"gpu", "UUID", "device", "modelName", "pci_bus_id", "Hostname",
	"node_id", "namespace", "job", "task_group", "alloc_id", "task", "sharing", "simulated",
}

func (g *GPU) labelValues() []string {
	sim := ""
	if g.Simulated {
		sim = "true"
	}
	return []string{
		strconv.Itoa(g.Index), g.UUID, g.Device, g.ModelName, g.PCIBusID, g.Hostname,
		g.NodeID, g.Namespace, g.Job, g.TaskGroup, g.AllocID, g.Task, g.Sharing, sim,
	}
}

// dcgmField is one dcgm-exporter series: name, type and help as its
// default counters file has them, and how to read it from a GPU.
type dcgmField struct {
	name  string
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(*GPU) float64
}

func newField(name, help string, typ prometheus.ValueType, value func(*GPU) float64) dcgmField {
	return dcgmField{name: name, desc: prometheus.NewDesc(name, help, GPULabels, nil), typ: typ, value: value}
}

// dcgmFields are the series each GPU exports, in dcgm-exporter's names.
var dcgmFields = []dcgmField{
	newField("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", prometheus.GaugeValue, func(g *GPU) float64 { return g.UtilPercent }),
	newField("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", prometheus.GaugeValue, func(g *GPU) float64 { return g.MemCopyUtilPercent }),
	newField("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", prometheus.GaugeValue, func(g *GPU) float64 { return g.FBUsedMiB }),
	newField("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", prometheus.GaugeValue, func(g *GPU) float64 { return g.FBFreeMiB }),
	newField("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", prometheus.GaugeValue, func(g *GPU) float64 { return g.PowerWatts }),
	newField("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", prometheus.GaugeValue, func(g *GPU) float64 { return g.TempC }),
	newField("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", prometheus.GaugeValue, func(g *GPU) float64 { return g.SMClockMHz }),
	newField("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", prometheus.GaugeValue, func(g *GPU) float64 { return g.LastXID }),
	newField("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Total number of double-bit volatile ECC errors.", prometheus.CounterValue, func(g *GPU) float64 { return g.ECCDBEVolatile }),
}

// DCGMNames are the dcgm-exporter series names GPUCollector exports.
func DCGMNames() []string {
	out := make([]string, len(dcgmFields))
	for i, f := range dcgmFields {
		out[i] = f.name
	}
	return out
}

// GPUCollector exports the GPUs read returns, at each scrape, under
// dcgm-exporter's names. Reading at scrape time (instead of setting
// go-metrics gauges) keeps the series exact: a GPU an allocation gave up
// loses that allocation's labels at the next scrape, with no expiry to
// wait for, and nothing is sampled while nobody scrapes.
type GPUCollector struct {
	read func() []GPU
}

// NewGPUCollector returns a collector over read, which must be safe to
// call from concurrent scrapes.
func NewGPUCollector(read func() []GPU) *GPUCollector { return &GPUCollector{read: read} }

// Describe implements prometheus.Collector.
func (c *GPUCollector) Describe(ch chan<- *prometheus.Desc) { DescribeGPUs(ch) }

// Collect implements prometheus.Collector.
func (c *GPUCollector) Collect(ch chan<- prometheus.Metric) { CollectGPUs(ch, c.read()) }

// DescribeGPUs sends the descriptions of the GPU series, for a collector
// that exports GPUs among other series.
func DescribeGPUs(ch chan<- *prometheus.Desc) {
	for _, f := range dcgmFields {
		ch <- f.desc
	}
}

// CollectGPUs sends every series of gpus. A GPU listed twice with the
// same holder is exported once.
func CollectGPUs(ch chan<- prometheus.Metric, gpus []GPU) {
	seen := make(map[string]bool, len(gpus))
	for i := range gpus {
		g := &gpus[i]
		key := g.UUID + "\x00" + g.AllocID + "\x00" + g.Task
		if seen[key] {
			continue
		}
		seen[key] = true
		lv := g.labelValues()
		for _, f := range dcgmFields {
			ch <- prometheus.MustNewConstMetric(f.desc, f.typ, f.value(g), lv...)
		}
	}
}
