package simulated

import (
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

func TestStats(t *testing.T) {
	groups := Devices("node-a", Config{Count: 3})
	groups = append(groups, &structs.NodeDeviceResource{
		Vendor: "nvidia", Type: "gpu", Name: "real",
		Instances: []*structs.NodeDevice{{ID: "GPU-real"}},
	})
	ids := []string{groups[0].Instances[0].ID, groups[0].Instances[1].ID, groups[0].Instances[2].ID}
	held := map[string]bool{ids[1]: true}
	now := time.Unix(1_800_000_000, 0)

	got := Stats(groups, held, now)
	if len(got) != 3 {
		t.Fatalf("got %d stats, want 3 (the non-simulated group skipped)", len(got))
	}
	tests := []struct {
		name           string
		stats          *structs.DeviceStats
		id             string
		utilLo, utilHi float64
		memLo, memHi   float64 // fraction of total
	}{
		{"free", got[0], ids[0], 0, 2, 0, 0.02},
		{"held", got[1], ids[1], 75, 95, 0.5, 0.7},
		{"free2", got[2], ids[2], 0, 2, 0, 0.02},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.stats
			if s.ID != tt.id || !s.Simulated || s.Timestamp != now.UnixNano() {
				t.Errorf("got ID %s simulated %v ts %d, want %s true %d", s.ID, s.Simulated, s.Timestamp, tt.id, now.UnixNano())
			}
			if s.GPUUtilPercent < tt.utilLo || s.GPUUtilPercent > tt.utilHi {
				t.Errorf("utilisation: got %.1f, want %.0f-%.0f", s.GPUUtilPercent, tt.utilLo, tt.utilHi)
			}
			if s.MemoryTotalBytes != DefaultMemoryBytes {
				t.Errorf("memory total: got %d, want %d", s.MemoryTotalBytes, uint64(DefaultMemoryBytes))
			}
			frac := float64(s.MemoryUsedBytes) / float64(s.MemoryTotalBytes)
			if frac < tt.memLo || frac > tt.memHi {
				t.Errorf("memory used: got %.3f of total, want %.2f-%.2f", frac, tt.memLo, tt.memHi)
			}
			if s.TemperatureC <= 0 || s.PowerWatts <= 0 {
				t.Errorf("temperature %.1f, power %.1f: want both > 0", s.TemperatureC, s.PowerWatts)
			}
		})
	}
	if got[1].PowerWatts <= got[0].PowerWatts || got[1].TemperatureC <= got[0].TemperatureC {
		t.Errorf("held GPU: power %.0f W, %.0f C; want more than the free one's %.0f W, %.0f C",
			got[1].PowerWatts, got[1].TemperatureC, got[0].PowerWatts, got[0].TemperatureC)
	}
}

func TestStatsDeterministic(t *testing.T) {
	groups := Devices("node-a", Config{Count: 8})
	held := map[string]bool{groups[0].Instances[0].ID: true}
	now := time.Unix(1_800_000_000, 0)
	a := Stats(groups, held, now)
	b := Stats(groups, held, now.Add(WobblePeriod/5)) // same period
	moved := false
	for i := range a {
		b[i].Timestamp = a[i].Timestamp
		if *a[i] != *b[i] {
			t.Errorf("GPU %d in the same period: got %+v, then %+v", i, *a[i], *b[i])
		}
	}
	for _, later := range []time.Duration{1, 2, 3} {
		c := Stats(groups, held, now.Add(later*WobblePeriod))
		for i := range a {
			moved = moved || c[i].GPUUtilPercent != a[i].GPUUtilPercent
		}
	}
	if !moved {
		t.Error("stats never moved across later periods")
	}
}

// TestStatsLoad: a held GPU shows the load asked of it (0 is exactly
// 0%, an allocation that leaves its GPU idle), still labelled simulated
// and with a held GPU's memory; Stats is StatsLoad at BusyUtilPercent.
func TestStatsLoad(t *testing.T) {
	groups := Devices("node-a", Config{Count: 3})
	ids := []string{groups[0].Instances[0].ID, groups[0].Instances[1].ID, groups[0].Instances[2].ID}
	for i := range 20 {
		now := time.Unix(1_800_000_000, 0).Add(time.Duration(i) * WobblePeriod)
		got := StatsLoad(groups, map[string]float64{ids[0]: 0, ids[1]: 40, ids[2]: BusyUtilPercent}, now)
		if got[0].GPUUtilPercent != 0 || !got[0].Simulated || got[0].MemoryUsedBytes < DefaultMemoryBytes/2 {
			t.Errorf("load 0: got %.2f%%, simulated %v, %d bytes used; want exactly 0%%, simulated, a held GPU's memory", got[0].GPUUtilPercent, got[0].Simulated, got[0].MemoryUsedBytes)
		}
		if u := got[1].GPUUtilPercent; u < 35 || u > 45 {
			t.Errorf("load 40: got %.2f%%, want 35-45", u)
		}
		want := Stats(groups, map[string]bool{ids[2]: true}, now)[2]
		if *got[2] != *want {
			t.Errorf("load %d: got %+v, want Stats' held GPU %+v", BusyUtilPercent, *got[2], *want)
		}
	}
}
