package nvidia

import (
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/droverhq/drover/structs"
)

// Stats reads the current utilisation, memory use, temperature, power
// draw, SM clock and double-bit ECC count of the GPUs (or MIG devices) with the given UUIDs, in that order.
// It calls lib.Init and lib.Shutdown itself. A UUID NVML does not know is
// skipped; a figure a device does not report (MIG devices report no
// utilisation, temperature or power) is left zero.
func Stats(lib nvml.Interface, uuids []string) ([]*structs.DeviceStats, error) {
	if ret := call0(lib.Init); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("%w: init: %v", ErrNoDriver, ret)
	}
	defer call0(lib.Shutdown)
	now := time.Now().UnixNano()
	out := make([]*structs.DeviceStats, 0, len(uuids))
	for _, id := range uuids {
		dev, ret := call(func() (nvml.Device, nvml.Return) { return lib.DeviceGetHandleByUUID(id) })
		if ret != nvml.SUCCESS || dev == nil {
			continue
		}
		out = append(out, deviceStats(dev, id, now))
	}
	return out, nil
}

// deviceStats reads one device's figures.
func deviceStats(dev nvml.Device, id string, now int64) *structs.DeviceStats {
	s := &structs.DeviceStats{ID: id, Timestamp: now}
	if u, ret := call(dev.GetUtilizationRates); ret == nvml.SUCCESS {
		s.GPUUtilPercent = float64(u.Gpu)
		s.MemoryUtilPercent = float64(u.Memory)
	}
	if m, ret := call(dev.GetMemoryInfo); ret == nvml.SUCCESS {
		s.MemoryUsedBytes = m.Used
		s.MemoryTotalBytes = m.Total
	}
	// GetTemperatureV's handler wraps an unexported device type (go-nvml's
	// mocks cannot answer it) and needs driver 535 or newer; the older call
	// works everywhere.
	//nolint:staticcheck // deprecated, see above
	temp, ret := call(func() (uint32, nvml.Return) { return dev.GetTemperature(nvml.TEMPERATURE_GPU) })
	if ret == nvml.SUCCESS {
		s.TemperatureC = float64(temp)
	}
	if mw, ret := call(dev.GetPowerUsage); ret == nvml.SUCCESS {
		s.PowerWatts = float64(mw) / 1000
	}
	if mhz, ret := call(func() (uint32, nvml.Return) { return dev.GetClockInfo(nvml.CLOCK_SM) }); ret == nvml.SUCCESS {
		s.SMClockMHz = float64(mhz)
	}
	dbe, ret := call(func() (uint64, nvml.Return) {
		return dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
	})
	if ret == nvml.SUCCESS {
		s.ECCDBEVolatile = dbe
	}
	return s
}
