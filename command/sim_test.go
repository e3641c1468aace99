package command

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSimJSON(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantPlaced int
		wantFailed int
		wantRatio  float64
		wantJobs   float64 // job_size
	}{
		// pod-0 and pod-3 take the T4s, pod-1 both V100s, pod-2 no GPU;
		// pod-4 finds no GPU left.
		{"trace files", []string{"-nodes", "testdata/sim_nodes.csv", "-pods", "testdata/sim_pods.csv"}, 4, 1, 1, 1},
		{"limit", []string{"-nodes", "testdata/sim_nodes.csv", "-pods", "testdata/sim_pods.csv", "-limit", "2"}, 2, 0, 0.75, 1},
		{"trace as batch jobs", []string{"-nodes", "testdata/sim_nodes.csv", "-pods", "testdata/sim_pods.csv", "-job-size", "3"}, 4, 1, 1, 3},
		{"synthetic", []string{"-synthetic-nodes", "2", "-gpus-per-node", "2", "--policy", "binpack"}, 4, 0, 1, 2000},
		{"synthetic one job per task", []string{"-synthetic-nodes", "2", "-gpus-per-node", "2", "-job-size", "1"}, 4, 0, 1, 1},
		{"synthetic with arrival", []string{"-synthetic-nodes", "2", "-gpus-per-node", "2", "-arrival", "1.5", "-seed", "7"}, 4, 2, 1, 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", append([]string{"sim", "-json"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit = %d, want 0 (stderr %q)", code, stderr)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("stdout %q: not one JSON object: %v", stdout, err)
			}
			for _, key := range []string{"placed", "failed", "gpu_allocation_ratio", "fragmentation", "placements_per_second", "p50_ms", "p99_ms"} {
				if _, ok := got[key]; !ok {
					t.Errorf("JSON lacks key %q: %s", key, stdout)
				}
			}
			if got["placed"] != float64(tt.wantPlaced) || got["failed"] != float64(tt.wantFailed) || got["gpu_allocation_ratio"] != tt.wantRatio || got["job_size"] != tt.wantJobs {
				t.Errorf("got placed %v, failed %v, ratio %v, job size %v; want %d, %d, %v, %v",
					got["placed"], got["failed"], got["gpu_allocation_ratio"], got["job_size"], tt.wantPlaced, tt.wantFailed, tt.wantRatio, tt.wantJobs)
			}
		})
	}
}

func TestSimSummary(t *testing.T) {
	code, stdout, stderr := run(t, "", "sim", "-nodes", "testdata/sim_nodes.csv", "-pods", "testdata/sim_pods.csv")
	if code != 0 {
		t.Fatalf("exit = %d, want 0 (stderr %q)", code, stderr)
	}
	for _, want := range []string{"Nodes           = 3 (4 GPUs)", "Submitted       = 5 pods asking 5.0 GPUs, one job each", "Placed          = 4", "Failed          = 1", "GPU allocation  = 100.00% (4.0 GPUs)", "Latency p99"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout = %q, want it to contain %q", stdout, want)
		}
	}
}

func TestSimErrors(t *testing.T) {
	nodes := []string{"-nodes", "testdata/sim_nodes.csv"}
	tests := []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"bad pod line", append(nodes, "-pods", "testdata/sim_bad_pods.csv"), "testdata/sim_bad_pods.csv:3: column gpu_milli: 1200 out of range"},
		{"missing pod file", append(nodes, "-pods", "testdata/nope.csv"), "testdata/nope.csv"},
		{"bad node file", []string{"-nodes", "testdata/sim_pods.csv"}, "testdata/sim_pods.csv:1: header lacks column(s) sn, gpu, model"},
		{"no cluster", nil, "exactly one of -nodes and -synthetic-nodes"},
		{"two clusters", append(nodes, "-synthetic-nodes", "2"), "exactly one of -nodes and -synthetic-nodes"},
		{"unknown policy", append(nodes, "-policy", "random"), `-policy: sim: unknown policy "random"`},
		{"negative arrival", append(nodes, "-arrival", "-1"), "-arrival must not be negative"},
		{"negative job size", append(nodes, "-job-size", "-2"), "-job-size must not be negative"},
		{"bad number", append(nodes, "-arrival", "lots"), "-arrival"},
		{"unknown flag", append(nodes, "-bogus"), "-bogus"},
		{"argument", append(nodes, "extra"), "no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", append([]string{"sim"}, tt.args...)...)
			if code != 1 {
				t.Errorf("exit = %d, want 1 (stdout %q)", code, stdout)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tt.wantStderr)
			}
		})
	}
}
