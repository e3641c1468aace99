package structs

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// hostileConfig is a msgpack Task whose Config holds depth arrays, each
// declaring 2^31-1 elements and giving one: the next array.
func hostileConfig(depth int) []byte {
	b := append([]byte{0x81, 0xa6}, "Config"...)
	b = append(b, 0x81, 0xa1, 'a')
	b = append(b, bytes.Repeat([]byte{0xdd, 0x7f, 0xff, 0xff, 0xff}, depth)...)
	return b
}

// allocated returns the bytes fn allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodeBoundsHostileInput: nesting and declared lengths cannot make
// Decode recurse or allocate without bound. With the codec's default
// depth (1024) the nested arrays allocated 255 MB from 5 KB, the nested
// maps about 650 MB.
func TestDecodeBoundsHostileInput(t *testing.T) {
	tests := []struct {
		name     string
		src      []byte
		want     string
		maxAlloc uint64
	}{
		{"100000 nested arrays in a config", hostileConfig(100_000), "maximum decoding depth exceeded", 32 << 20},
		{"2^31-element array of allocations", append([]byte{0x81, 0xa5, 'E', 'v', 'a', 'l', 's', 0xdd, 0x7f, 0xff, 0xff, 0xff}, 0xc1), "", 4 << 20},
		{"2^32-byte string", []byte{0x81, 0xa5, 'J', 'o', 'b', 'I', 'D', 0xdb, 0xff, 0xff, 0xff, 0xff, 'x'}, "EOF", 4 << 20},
		{"100000 nested maps in a config", append(append([]byte{0x81, 0xa6}, "Config"...), bytes.Repeat([]byte{0xdf, 0x7f, 0xff, 0xff, 0xff, 0xa1, 'a'}, 100_000)...), "maximum decoding depth exceeded", 100 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			n := allocated(func() {
				if strings.Contains(tt.name, "allocations") {
					err = Decode(tt.src, &EvalUpdateRequest{})
				} else if strings.Contains(tt.name, "string") {
					err = Decode(tt.src, &JobDeregisterRequest{})
				} else {
					err = Decode(tt.src, &Task{})
				}
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode: got %v, want an error containing %q", err, tt.want)
			}
			t.Logf("allocated %d bytes", n)
			if n > tt.maxAlloc {
				t.Errorf("Decode allocated %d bytes, want at most %d", n, tt.maxAlloc)
			}
		})
	}
}

// TestDecodeDeepestLegitimateJob: a job whose task config is as deep as
// limits.task_config_max_depth may be set survives the deepest message
// that carries it (plan results: an allocation embeds its job).
func TestDecodeDeepestLegitimateJob(t *testing.T) {
	var v any = "leaf"
	for range TaskConfigMaxDepthCap - 1 {
		v = []any{v}
	}
	cfg := map[string]any{"a": v}
	if d := valueDepth(cfg, 1000); d != TaskConfigMaxDepthCap {
		t.Fatalf("config depth %d, want %d", d, TaskConfigMaxDepthCap)
	}
	job := &Job{ID: "j", TaskGroups: []*TaskGroup{{Name: "g", Tasks: []*Task{{Name: "t", Config: cfg}}}}}
	b, err := Encode(ApplyPlanResultsRequestType, &ApplyPlanResultsRequest{Allocs: []*Allocation{{ID: "a", Job: job}}})
	if err != nil {
		t.Fatal(err)
	}
	var out ApplyPlanResultsRequest
	if err := Decode(b[1:], &out); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if d := valueDepth(out.Allocs[0].Job.TaskGroups[0].Tasks[0].Config, 1000); d != TaskConfigMaxDepthCap {
		t.Errorf("decoded config depth %d, want %d", d, TaskConfigMaxDepthCap)
	}
}
