package nvidia

import (
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/droverhq/drover/structs"
)

func TestStatsDGXA100Mock(t *testing.T) {
	lib := dgxa100.New()
	devs := devices(t, lib)
	// GPU 0 reports everything; GPU 1 answers only memory, as a MIG
	// device or an old board would.
	d0 := devs[0]
	d0.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{Gpu: 87, Memory: 41}, nvml.SUCCESS
	}
	d0.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		return nvml.Memory{Total: 40 << 30, Used: 10 << 30, Free: 30 << 30}, nvml.SUCCESS
	}
	d0.GetTemperatureFunc = func(s nvml.TemperatureSensors) (uint32, nvml.Return) {
		if s != nvml.TEMPERATURE_GPU {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return 64, nvml.SUCCESS
	}
	d0.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 312500, nvml.SUCCESS }
	d0.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		if c != nvml.CLOCK_SM {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return 1410, nvml.SUCCESS
	}
	d0.GetTotalEccErrorsFunc = func(e nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
		if e != nvml.MEMORY_ERROR_TYPE_UNCORRECTED || c != nvml.VOLATILE_ECC {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return 3, nvml.SUCCESS
	}
	devs[1].GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED
	}

	got, err := Stats(lib, []string{devs[0].UUID, "GPU-not-here", devs[1].UUID})
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d stats, want 2 (the unknown UUID skipped)", len(got))
	}
	want := []structs.DeviceStats{
		{ID: devs[0].UUID, GPUUtilPercent: 87, MemoryUtilPercent: 41, MemoryUsedBytes: 10 << 30,
			MemoryTotalBytes: 40 << 30, TemperatureC: 64, PowerWatts: 312.5, SMClockMHz: 1410, ECCDBEVolatile: 3},
		// The mock's own memory info: 40 GiB, none used.
		{ID: devs[1].UUID, MemoryTotalBytes: 40 << 30},
	}
	for i, w := range want {
		g := *got[i]
		if g.Timestamp == 0 {
			t.Errorf("stats %d: no timestamp", i)
		}
		g.Timestamp = 0
		if g != w {
			t.Errorf("stats %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	if n, m := len(lib.InitCalls()), len(lib.ShutdownCalls()); n != 1 || m != 1 {
		t.Errorf("Init/Shutdown calls: got %d/%d, want 1/1", n, m)
	}
}

func TestStatsNoDriver(t *testing.T) {
	lib := dgxa100.New()
	lib.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	_, err := Stats(lib, []string{"GPU-x"})
	if !errors.Is(err, ErrNoDriver) {
		t.Errorf("got %v, want ErrNoDriver", err)
	}
}
