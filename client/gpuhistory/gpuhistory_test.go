package gpuhistory

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

var t0 = time.Unix(1_700_000_000, 0)

func reading(util map[string]float64, order ...string) []*structs.DeviceStats {
	var out []*structs.DeviceStats
	for _, id := range order {
		out = append(out, &structs.DeviceStats{ID: id, GPUUtilPercent: util[id], Simulated: true})
	}
	return out
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // "" is valid
	}{
		{"defaults", Config{}, ""},
		{"one sample", Config{Interval: time.Second, Window: time.Second}, ""},
		{"the limit", Config{Interval: time.Second, Window: 10_000 * time.Second}, ""},
		{"over the limit", Config{Interval: time.Second, Window: 10_001 * time.Second}, "over the limit 10000"},
		{"window under interval", Config{Interval: time.Minute, Window: time.Second}, "shorter than its interval"},
		{"interval too short", Config{Interval: time.Millisecond, Window: time.Second}, "under the minimum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("Validate: got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRingBounded: the history keeps Window/Interval samples per GPU,
// the newest, oldest first; a GPU whose reading fails keeps its history,
// one the node no longer has is forgotten.
func TestRingBounded(t *testing.T) {
	r := New(Config{Interval: time.Second, Window: 5 * time.Second})
	for i := range 12 {
		r.Record(t0.Add(time.Duration(i)*time.Second), reading(map[string]float64{"a": float64(i), "b": 50}, "a", "b"), []string{"a", "b"}, nil)
	}
	h := r.History(nil, 0)
	if len(h.GPUs) != 2 || h.GPUs[0].ID != "a" || h.GPUs[1].ID != "b" {
		t.Fatalf("GPUs: got %+v, want a then b", h.GPUs)
	}
	var utils []float32
	for _, s := range h.GPUs[0].Samples {
		utils = append(utils, s.GPUUtilPercent)
	}
	if want := []float32{7, 8, 9, 10, 11}; !slices.Equal(utils, want) {
		t.Errorf("samples of a: got %v, want %v", utils, want)
	}
	if got := len(r.rings["a"].buf); got != 5 {
		t.Errorf("ring size: got %d, want 5", got)
	}
	if last := h.GPUs[0].Samples[4].Timestamp; last != t0.Add(11*time.Second).UnixNano() {
		t.Errorf("last sample time: got %d", last)
	}
	if got := r.History(nil, 2*time.Second).GPUs[0].Samples; len(got) != 2 {
		t.Errorf("window 2s: got %d samples, want 2", len(got))
	}
	if got := r.History([]string{"b"}, 0).GPUs; len(got) != 1 || got[0].ID != "b" {
		t.Errorf("only b: got %+v", got)
	}
	r.Record(t0.Add(12*time.Second), reading(nil, "b"), []string{"a", "b"}, nil) // a's reading failed
	if got := r.History([]string{"a"}, 0).GPUs; len(got) != 1 || len(got[0].Samples) != 5 {
		t.Errorf("after a failed reading of a: %+v, want its 5 samples kept", got)
	}
	r.Record(t0.Add(13*time.Second), reading(nil, "b"), []string{"b"}, nil) // a left the node
	if got := r.History(nil, 0).GPUs; len(got) != 1 || got[0].ID != "b" || len(r.rings) != 1 {
		t.Errorf("after a left: got %d GPUs, %d rings, want only b", len(got), len(r.rings))
	}
}

// TestHistoryMerged: an answer over the sample limit is merged down,
// keeping the peaks.
func TestHistoryMerged(t *testing.T) {
	r := New(Config{Interval: time.Second, Window: structs.MaxGPUHistorySamples * time.Second})
	ids := []string{"a", "b", "c"}
	for i := range structs.MaxGPUHistorySamples {
		u := 1.0
		if i == 4242 {
			u = 99
		}
		r.Record(t0.Add(time.Duration(i)*time.Second), reading(map[string]float64{"a": u, "b": u, "c": u}, ids...), ids, nil)
	}
	h := r.History(nil, 0)
	total := 0
	for _, g := range h.GPUs {
		total += len(g.Samples)
		peak := slices.MaxFunc(g.Samples, func(x, y structs.GPUSample) int { return int(x.GPUUtilPercent - y.GPUUtilPercent) })
		if peak.GPUUtilPercent != 99 {
			t.Errorf("GPU %s: merged samples lost the peak: max %v", g.ID, peak.GPUUtilPercent)
		}
	}
	if total > structs.MaxGPUHistorySamples || total < structs.MaxGPUHistorySamples/2 {
		t.Errorf("answer: %d samples in all, want at most %d and not much fewer", total, structs.MaxGPUHistorySamples)
	}
}

// TestIdle: an allocation is idle once every GPU it holds stayed under
// the threshold for the idle window while it held them.
func TestIdle(t *testing.T) {
	type step struct {
		util   map[string]float64
		holds  map[string][]string
		failed bool // no reading this second
	}
	both := map[string][]string{"alloc": {"g0", "g1"}}
	quiet := map[string]float64{"g0": 0, "g1": 4.9}
	busy1 := map[string]float64{"g0": 0, "g1": 5}
	tests := []struct {
		name     string
		steps    []step // one a second
		wantIdle bool
		wantGPUs []string
	}{
		{"quiet for the window", repeat(step{quiet, both, false}, 11), true, []string{"g0", "g1"}},
		{"quiet, window not yet over", repeat(step{quiet, both, false}, 10), false, []string{}},
		{"one GPU at the threshold", repeat(step{busy1, both, false}, 11), false, []string{"g0"}},
		{"busy once in the window", append(append(repeat(step{quiet, both, false}, 5), step{map[string]float64{"g0": 80, "g1": 0}, both, false}), repeat(step{quiet, both, false}, 9)...), false, []string{"g1"}},
		{"quiet GPUs before the allocation held them", append(repeat(step{quiet, nil, false}, 20), repeat(step{quiet, both, false}, 5)...), false, []string{}},
		{"no GPU", repeat(step{quiet, map[string][]string{"alloc": {}}, false}, 11), false, []string{}},
		{"quiet, then readings fail past the window", append(repeat(step{quiet, both, false}, 3), repeat(step{nil, both, true}, 12)...), false, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(Config{Interval: time.Second, Window: time.Minute, IdleWindow: 10 * time.Second})
			for i, s := range tt.steps {
				stats := reading(s.util, "g0", "g1")
				if s.failed {
					stats = nil
				}
				r.Record(t0.Add(time.Duration(i)*time.Second), stats, []string{"g0", "g1"}, s.holds)
			}
			last := tt.steps[len(tt.steps)-1].holds["alloc"]
			h := r.AllocHistory("alloc", last, 0)
			for _, g := range r.History(nil, 0).GPUs {
				if want := slices.Contains(last, g.ID); g.Allocated != want {
					t.Errorf("GPU %s: Allocated %v, want %v", g.ID, g.Allocated, want)
				}
			}
			if h.Idle != tt.wantIdle || !slices.Equal(h.IdleGPUs, tt.wantGPUs) {
				t.Errorf("idle: got %v %v, want %v %v", h.Idle, h.IdleGPUs, tt.wantIdle, tt.wantGPUs)
			}
			if h.Idle != (h.IdleSince != 0) {
				t.Errorf("IdleSince %d with Idle %v", h.IdleSince, h.Idle)
			}
			if h.IdleWindow != 10*time.Second || h.IdleThresholdPercent != structs.GPUIdleThresholdPercent {
				t.Errorf("idle settings: got %v %v", h.IdleWindow, h.IdleThresholdPercent)
			}
		})
	}
}

func repeat[T any](v T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestIdleUnknownAlloc: an allocation the recorder has not seen (its
// runner just started) is not idle, and its GPUs' history still shows.
func TestIdleUnknownAlloc(t *testing.T) {
	r := New(Config{Interval: time.Second, Window: time.Minute, IdleWindow: time.Second})
	for i := range 5 {
		r.Record(t0.Add(time.Duration(i)*time.Second), reading(nil, "g0"), []string{"g0"}, nil)
	}
	h := r.AllocHistory("new", []string{"g0"}, 0)
	if h.Idle || len(h.GPUs) != 1 || len(h.GPUs[0].Samples) != 5 || h.AllocID != "new" {
		t.Errorf("got idle %v, %d GPUs, alloc %q; want not idle, g0's 5 samples", h.Idle, len(h.GPUs), h.AllocID)
	}
	if h := r.AllocHistory("none", nil, 0); len(h.GPUs) != 0 {
		t.Errorf("allocation without GPUs: got %d GPUs, want none", len(h.GPUs))
	}
}
