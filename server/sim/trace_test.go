package sim

import (
	"reflect"
	"strings"
	"testing"
)

func TestReadNodes(t *testing.T) {
	tests := []struct {
		name    string
		csv     string
		want    []NodeSpec
		wantErr string
	}{
		{
			name: "trace rows",
			csv: "sn,cpu_milli,memory_mib,gpu,model\n" +
				"openb-node-0000,32000,262144,0,\n" +
				"openb-node-0227,96000,786432,8,G2\n",
			want: []NodeSpec{
				{Name: "openb-node-0000", CPUMilli: 32000, MemoryMiB: 262144},
				{Name: "openb-node-0227", CPUMilli: 96000, MemoryMiB: 786432, GPUs: 8, Model: "G2"},
			},
		},
		{
			name: "columns found by name",
			csv:  "model,gpu,sn,memory_mib,cpu_milli\nT4,1,n1,1024,4000\n",
			want: []NodeSpec{{Name: "n1", CPUMilli: 4000, MemoryMiB: 1024, GPUs: 1, Model: "T4"}},
		},
		{name: "empty file", csv: "", wantErr: "nodes.csv: empty file"},
		{name: "missing column", csv: "sn,cpu_milli,gpu,model\nn1,1,0,\n", wantErr: "nodes.csv:1: header lacks column(s) memory_mib"},
		{name: "not a number", csv: "sn,cpu_milli,memory_mib,gpu,model\nn1,1000,64,0,\nn2,lots,64,0,\n",
			wantErr: `nodes.csv:3: column cpu_milli: "lots" is not an integer`},
		{name: "negative", csv: "sn,cpu_milli,memory_mib,gpu,model\nn1,1000,-64,0,\n",
			wantErr: "nodes.csv:2: column memory_mib: -64 out of range"},
		{name: "gpus without model", csv: "sn,cpu_milli,memory_mib,gpu,model\nn1,1000,64,2,\n",
			wantErr: "nodes.csv:2: column model: empty, but the node has 2 GPUs"},
		{name: "duplicate name", csv: "sn,cpu_milli,memory_mib,gpu,model\nn1,1,1,0,\nn1,1,1,0,\n",
			wantErr: `nodes.csv:3: node "n1" already defined on line 2`},
		{name: "wrong field count", csv: "sn,cpu_milli,memory_mib,gpu,model\nn1,1,1,0,,extra\n",
			wantErr: "nodes.csv:2: wrong number of fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadNodes(strings.NewReader(tt.csv), "nodes.csv")
			if gotErr := errString(err); !strings.Contains(gotErr, tt.wantErr) || (tt.wantErr == "") != (err == nil) {
				t.Fatalf("got error %q, want %q", gotErr, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReadPods(t *testing.T) {
	const full = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	const reduced = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
	tests := []struct {
		name    string
		csv     string
		want    []PodSpec
		wantErr string
	}{
		{
			name: "full rows",
			csv: full +
				"openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061\n" +
				"openb-pod-0009,12000,16384,1,1000,V100M16|V100M32,LS,Running,4975773,12902960,4975773\n" +
				"openb-pod-0017,88000,327680,8,1000,G2,Burstable,Succeeded,9437497,10769854,9437497\n" +
				"openb-pod-0100,4000,8192,0,0,,BE,Running,1,2,1\n",
			want: []PodSpec{
				{Name: "openb-pod-0001", CPUMilli: 6000, MemoryMiB: 12288, NumGPU: 1, GPUMilli: 460},
				{Name: "openb-pod-0009", CPUMilli: 12000, MemoryMiB: 16384, NumGPU: 1, GPUMilli: 1000, GPUSpec: []string{"V100M16", "V100M32"}},
				{Name: "openb-pod-0017", CPUMilli: 88000, MemoryMiB: 327680, NumGPU: 8, GPUMilli: 1000, GPUSpec: []string{"G2"}},
				{Name: "openb-pod-0100", CPUMilli: 4000, MemoryMiB: 8192},
			},
		},
		{
			name: "repeated model in spec kept once",
			csv:  full + "p,1,1,1,1000,V100M16|V100M32|V100M32,LS,Running,0,0,0\n",
			want: []PodSpec{{Name: "p", CPUMilli: 1, MemoryMiB: 1, NumGPU: 1, GPUMilli: 1000, GPUSpec: []string{"V100M16", "V100M32"}}},
		},
		{
			name: "reduced rows",
			csv:  reduced + "openb-pod-0000,12000,16384,1,1000\n",
			want: []PodSpec{{Name: "openb-pod-0000", CPUMilli: 12000, MemoryMiB: 16384, NumGPU: 1, GPUMilli: 1000}},
		},
		{name: "missing column", csv: "name,cpu_milli,memory_mib,num_gpu\np,1,1,0\n",
			wantErr: "pods.csv:1: header lacks column(s) gpu_milli"},
		{name: "share above one GPU", csv: reduced + "p,1,1,1,1000\nq,1,1,1,1500\n",
			wantErr: "pods.csv:3: column gpu_milli: 1500 out of range [0, 1000]"},
		{name: "fraction of several GPUs", csv: reduced + "p,1,1,2,500\n",
			wantErr: "pods.csv:2: column gpu_milli: fraction 500 of a GPU needs num_gpu 1, have 2"},
		{name: "GPUs without share", csv: reduced + "p,1,1,1,0\n",
			wantErr: "pods.csv:2: column gpu_milli: 0 with num_gpu 1"},
		{name: "empty name", csv: reduced + ",1,1,0,0\n", wantErr: "pods.csv:2: column name: empty pod name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadPods(strings.NewReader(tt.csv), "pods.csv")
			if gotErr := errString(err); !strings.Contains(gotErr, tt.wantErr) || (tt.wantErr == "") != (err == nil) {
				t.Fatalf("got error %q, want %q", gotErr, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLoadTraceFiles(t *testing.T) {
	nodes, err := LoadNodes("testdata/nodes.csv")
	if err != nil {
		t.Fatalf("load nodes: %v", err)
	}
	if got, want := ClusterGPUs(nodes), 7; len(nodes) != 4 || got != want {
		t.Errorf("got %d nodes with %d GPUs, want 4 with %d", len(nodes), got, want)
	}
	pods, err := LoadPods("testdata/pods.csv")
	if err != nil {
		t.Fatalf("load pods: %v", err)
	}
	if len(pods) != 6 {
		t.Errorf("got %d pods, want 6", len(pods))
	}
	if _, err := LoadPods("testdata/bad_pods.csv"); errString(err) != `testdata/bad_pods.csv:3: column num_gpu: "two" is not an integer` {
		t.Errorf("got error %q, want testdata/bad_pods.csv:3 naming num_gpu", errString(err))
	}
	if _, err := LoadNodes("testdata/absent.csv"); !strings.Contains(errString(err), "testdata/absent.csv") {
		t.Errorf("got error %q, want it to name testdata/absent.csv", errString(err))
	}
}

func TestPodShares(t *testing.T) {
	tests := []struct {
		pod         PodSpec
		wantShare   float64
		wantPercent int
		wantFrac    bool
	}{
		{PodSpec{NumGPU: 0}, 0, 0, false},
		{PodSpec{NumGPU: 1, GPUMilli: 1000}, 1, 100, false},
		{PodSpec{NumGPU: 1, GPUMilli: 460}, 0.46, 46, true},
		{PodSpec{NumGPU: 1, GPUMilli: 5}, 0.005, 1, true}, // rounded up
		{PodSpec{NumGPU: 8, GPUMilli: 1000}, 8, 100, false},
	}
	for _, tt := range tests {
		if got := tt.pod.GPUShare(); got != tt.wantShare {
			t.Errorf("%v: GPUShare got %v, want %v", tt.pod, got, tt.wantShare)
		}
		if got := tt.pod.ComputePercent(); got != tt.wantPercent {
			t.Errorf("%v: ComputePercent got %d, want %d", tt.pod, got, tt.wantPercent)
		}
		if got := tt.pod.Fractional(); got != tt.wantFrac {
			t.Errorf("%v: Fractional got %t, want %t", tt.pod, got, tt.wantFrac)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
