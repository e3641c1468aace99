package structs

// Resource usage a client samples from its host and GPUs, served by the
// client's stats API (GET /v1/client/stats and
// GET /v1/client/allocation/<id>/stats). Stats are a point-in-time
// reading and are never stored by the servers.

// DeviceStats is one GPU's (or MIG device's) usage at Timestamp (Unix
// nanoseconds). A value the device does not report is zero.
type DeviceStats struct {
	ID                string
	GPUUtilPercent    float64
	MemoryUtilPercent float64
	MemoryUsedBytes   uint64
	MemoryTotalBytes  uint64
	TemperatureC      float64
	PowerWatts        float64
	// SMClockMHz is the SM clock; ECCDBEVolatile counts double-bit ECC
	// errors since the driver loaded (dcgm-exporter's SM_CLOCK and
	// ECC_DBE_VOL_TOTAL).
	SMClockMHz     float64 `json:",omitempty"`
	ECCDBEVolatile uint64  `json:",omitempty"`
	Timestamp      int64
	// Simulated is true for a simulated GPU, whose numbers are synthetic.
	Simulated bool
}

// HostStats is the host's CPU and memory use.
type HostStats struct {
	// CPUPercent is the busy share of all CPUs over a short window, 0-100.
	CPUPercent       float64
	MemoryUsedBytes  uint64
	MemoryTotalBytes uint64
	UptimeSeconds    uint64
}

// NodeStats is a node's usage: the host and every GPU it reports.
type NodeStats struct {
	NodeID    string
	Timestamp int64
	Host      *HostStats
	Devices   []*DeviceStats

	// Nomad's api.HostStats fields (stats_nomad.go, FillNomad).
	Memory      *HostMemoryStats
	CPU         []*HostCPUStats
	DeviceStats []*DeviceGroupStats
	Uptime      uint64
}

// AllocStats is the usage of the GPUs an allocation holds.
type AllocStats struct {
	AllocID   string
	Timestamp int64
	Devices   []*DeviceStats
}
