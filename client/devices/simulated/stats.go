package simulated

import (
	"hash/fnv"
	"strconv"
	"time"

	"github.com/droverhq/drover/structs"
)

// Synthetic usage of a simulated GPU. A GPU an allocation holds looks
// busy, a free one idle; each figure moves by a small wobble that depends
// only on the GPU's ID and the WobblePeriod the time falls in, so equal
// inputs give equal stats and a page refreshing every few seconds sees
// the numbers move.
const (
	WobblePeriod = 5 * time.Second

	idleUtil, busyUtil   = 0, 85 // percent
	idleMemFraction      = 0.01
	busyMemFraction      = 0.6
	idleTempC, busyTempC = 34, 67
	idleWatts, busyWatts = 70, 520
	idleSMMHz, busySMMHz = 345, 1755
)

// Stats returns synthetic stats, marked Simulated, for every simulated
// instance in groups (groups without the simulated attribute are
// skipped), at time now. held names the instances an allocation holds.
func Stats(groups []*structs.NodeDeviceResource, held map[string]bool, now time.Time) []*structs.DeviceStats {
	var out []*structs.DeviceStats
	for _, g := range groups {
		if g.Attributes[structs.DeviceAttrSimulated] != "true" {
			continue
		}
		total, _ := structs.ParseBytes(g.Attributes[structs.DeviceAttrMemory])
		for _, inst := range g.Instances {
			out = append(out, deviceStats(inst.ID, total, held[inst.ID], now))
		}
	}
	return out
}

func deviceStats(id string, total uint64, busy bool, now time.Time) *structs.DeviceStats {
	w := wobble(id, now) // in [-1, 1]
	s := &structs.DeviceStats{
		ID:               id,
		MemoryTotalBytes: total,
		Timestamp:        now.UnixNano(),
		Simulated:        true,
	}
	if busy {
		s.GPUUtilPercent = busyUtil + 10*w
		s.MemoryUtilPercent = 45 + 10*w
		s.MemoryUsedBytes = uint64(float64(total) * (busyMemFraction + 0.05*w))
		s.TemperatureC = busyTempC + 4*w
		s.PowerWatts = busyWatts + 60*w
		s.SMClockMHz = busySMMHz + 50*w
		return s
	}
	s.GPUUtilPercent = idleUtil + 1 + w // 0-2
	s.MemoryUsedBytes = uint64(float64(total) * idleMemFraction)
	s.TemperatureC = idleTempC + 2*w
	s.PowerWatts = idleWatts + 5*w
	s.SMClockMHz = idleSMMHz
	return s
}

// wobble is a deterministic value in [-1, 1] for id in now's period.
func wobble(id string, now time.Time) float64 {
	h := fnv.New32a()
	h.Write([]byte(id))
	h.Write([]byte(strconv.FormatInt(now.UnixNano()/int64(WobblePeriod), 10)))
	return float64(h.Sum32()%2001)/1000 - 1
}
