//go:build linux

package exec

import (
	"path/filepath"
	"testing"
)

// TestCgroupMemoryMax: a task with memory_max gets memory_max as its
// hard limit and memory as its soft reservation, in both layouts.
func TestCgroupMemoryMax(t *testing.T) {
	tests := []struct {
		name    string
		unified bool
		want    map[string]string
	}{
		{"v2", true, map[string]string{
			"drover/t/memory.max": "268435456",
			"drover/t/memory.low": "67108864",
		}},
		{"v1", false, map[string]string{
			"memory/drover/t/memory.limit_in_bytes":      "268435456",
			"memory/drover/t/memory.soft_limit_in_bytes": "67108864",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			lim := limits{cpuShares: 1024, memoryMB: 256, memoryLowMB: 64}
			if _, err := (cgroupFS{root: root, unified: tt.unified}).create("t", lim); err != nil {
				t.Fatalf("create: %v", err)
			}
			for path, want := range tt.want {
				if got := readFile(t, filepath.Join(root, path)); got != want {
					t.Errorf("%s = %q, want %q", path, got, want)
				}
			}
		})
	}
}
