package structs

import "time"

// Nomad's shape of a node's stats (its api.HostStats), carried in
// NodeStats beside Drover's own fields so that the official Nomad
// client's Nodes().Stats reads Drover's answer. Fill sets them from
// Drover's fields.

// HostMemoryStats is Nomad's host memory reading, in bytes.
type HostMemoryStats struct {
	Total, Available, Used, Free uint64
}

// HostCPUStats is Nomad's per-CPU reading, in percent. Drover reads all
// CPUs together: one entry named "cpu".
type HostCPUStats struct {
	CPU                string
	User, System, Idle float64
}

// DeviceGroupStats is Nomad's readings of one device group, by instance.
type DeviceGroupStats struct {
	Vendor, Type, Name string
	InstanceStats      map[string]*NomadDeviceStats
}

// NomadDeviceStats is Nomad's reading of one device: a summary (memory
// used of total, as Nomad's NVIDIA plugin gives) and the rest by name.
type NomadDeviceStats struct {
	Summary   *StatValue
	Stats     *StatObject
	Timestamp time.Time
}

// StatObject is Nomad's named statistics.
type StatObject struct {
	Nested     map[string]*StatObject `json:",omitempty"`
	Attributes map[string]*StatValue
}

// StatValue is one of Nomad's statistics: a number (or fraction) with
// its unit.
type StatValue struct {
	FloatNumeratorVal   *float64 `json:",omitempty"`
	FloatDenominatorVal *float64 `json:",omitempty"`
	IntNumeratorVal     *int64   `json:",omitempty"`
	IntDenominatorVal   *int64   `json:",omitempty"`
	StringVal           *string  `json:",omitempty"`
	BoolVal             *bool    `json:",omitempty"`
	Unit                string
	Desc                string
}

// FillNomad sets the Nomad-shaped fields from the Drover ones; groups
// are the node's device groups, which name each instance's vendor, type
// and model.
func (s *NodeStats) FillNomad(groups []*NodeDeviceResource) {
	if h := s.Host; h != nil {
		free := h.MemoryTotalBytes - min(h.MemoryUsedBytes, h.MemoryTotalBytes)
		s.Memory = &HostMemoryStats{Total: h.MemoryTotalBytes, Used: h.MemoryUsedBytes, Available: free, Free: free}
		s.CPU = []*HostCPUStats{{CPU: "cpu", User: h.CPUPercent, Idle: 100 - h.CPUPercent}}
		s.Uptime = h.UptimeSeconds
	}
	byID := make(map[string]*DeviceStats, len(s.Devices))
	for _, d := range s.Devices {
		byID[d.ID] = d
	}
	s.DeviceStats = []*DeviceGroupStats{}
	for _, g := range groups {
		dg := &DeviceGroupStats{Vendor: g.Vendor, Type: g.Type, Name: g.Name, InstanceStats: map[string]*NomadDeviceStats{}}
		for _, inst := range g.Instances {
			if d := byID[inst.ID]; d != nil {
				dg.InstanceStats[inst.ID] = nomadDeviceStats(d)
			}
		}
		if len(dg.InstanceStats) > 0 {
			s.DeviceStats = append(s.DeviceStats, dg)
		}
	}
}

func nomadDeviceStats(d *DeviceStats) *NomadDeviceStats {
	mib := func(b uint64) *int64 { v := int64(b >> 20); return &v }
	float := func(unit, desc string, v float64) *StatValue {
		return &StatValue{FloatNumeratorVal: &v, Unit: unit, Desc: desc}
	}
	attrs := map[string]*StatValue{
		"GPU utilization":    float("%", "GPU utilization", d.GPUUtilPercent),
		"Memory utilization": float("%", "Percentage of bandwidth used by the memory", d.MemoryUtilPercent),
		"Temperature":        float("C", "Temperature of the device", d.TemperatureC),
		"Power usage":        float("W", "Power usage of the device", d.PowerWatts),
		"Memory used":        {IntNumeratorVal: mib(d.MemoryUsedBytes), IntDenominatorVal: mib(d.MemoryTotalBytes), Unit: "MiB", Desc: "Memory used of total"},
	}
	sim := d.Simulated
	attrs["Simulated"] = &StatValue{BoolVal: &sim, Desc: "The figures are synthetic (a simulated GPU)"}
	return &NomadDeviceStats{
		Summary:   &StatValue{IntNumeratorVal: mib(d.MemoryUsedBytes), IntDenominatorVal: mib(d.MemoryTotalBytes), Unit: "MiB", Desc: "UsedMemory / TotalMemory"},
		Stats:     &StatObject{Attributes: attrs},
		Timestamp: time.Unix(0, d.Timestamp),
	}
}
