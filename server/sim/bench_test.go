package sim

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// traceDir is the Alibaba GPU trace as the repository sees it.
var traceDir = filepath.Join("..", "..", "..", "shared", "traces", "alibaba-gpu-2023")

// BenchmarkReplayDefaultTrace replays the first 2,000 pods of the default
// trace, in file order, on the trace's 1,523 nodes. One iteration is one
// whole replay; placements/s and p99_ms are the replay's own figures.
func BenchmarkReplayDefaultTrace(b *testing.B) {
	nodesPath := filepath.Join(traceDir, "openb_node_list_all_node.csv")
	if _, err := os.Stat(nodesPath); err != nil {
		b.Skipf("trace not available: %v", err)
	}
	nodes, err := LoadNodes(nodesPath)
	if err != nil {
		b.Fatalf("load nodes: %v", err)
	}
	pods, err := LoadPods(filepath.Join(traceDir, "openb_pod_list_default.csv"))
	if err != nil {
		b.Fatalf("load pods: %v", err)
	}
	cfg := Config{Nodes: nodes, Pods: pods, Limit: 2000}
	var res *Result
	b.ReportAllocs()
	for b.Loop() {
		if res, _, err = Run(context.Background(), cfg); err != nil {
			b.Fatalf("run: %v", err)
		}
	}
	b.ReportMetric(res.PlacementsPerSecond, "placements/s")
	b.ReportMetric(res.P99Ms, "p99_ms")
	b.ReportMetric(res.GPUAllocationRatio, "gpu_ratio")
}

// BenchmarkReplaySynthetic places 10,000 single-GPU pods on 5,000
// synthetic nodes of 8 GPUs. One iteration is one whole replay.
func BenchmarkReplaySynthetic(b *testing.B) {
	cfg := Config{Nodes: SyntheticNodes(5000, 8), Pods: SyntheticPods(10000), Limit: 10000}
	var res *Result
	var err error
	b.ReportAllocs()
	for b.Loop() {
		if res, _, err = Run(context.Background(), cfg); err != nil {
			b.Fatalf("run: %v", err)
		}
	}
	b.ReportMetric(res.PlacementsPerSecond, "placements/s")
	b.ReportMetric(res.P99Ms, "p99_ms")
}
