package sim

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Bounds on trace values, to catch a wrong file early rather than build a
// nonsensical cluster.
const (
	maxMilli   = 1 << 40
	maxGPUs    = 1024
	wholeMilli = 1000 // gpu_milli of a whole GPU
)

// NodeSpec is one row of a node CSV (`sn,cpu_milli,memory_mib,gpu,model`).
type NodeSpec struct {
	Name      string
	CPUMilli  int64
	MemoryMiB int64
	GPUs      int
	Model     string // empty for CPU-only nodes
}

// PodSpec is one row of a pod CSV (`name,cpu_milli,memory_mib,num_gpu,
// gpu_milli[,gpu_spec,...]`). Columns other than these are ignored.
type PodSpec struct {
	Name      string
	CPUMilli  int64
	MemoryMiB int64
	NumGPU    int
	// GPUMilli is the share of each GPU in thousandths: 1000 is a whole
	// GPU; below 1000 (only with NumGPU 1) a fraction of one.
	GPUMilli int
	// GPUSpec lists the GPU models the pod accepts; empty accepts any.
	GPUSpec []string
}

// GPUShare is the pod's GPU demand in GPUs: NumGPU × GPUMilli/1000.
func (p PodSpec) GPUShare() float64 {
	return float64(p.NumGPU) * float64(p.GPUMilli) / wholeMilli
}

// Fractional reports whether the pod asks for a slice of one GPU.
func (p PodSpec) Fractional() bool { return p.NumGPU == 1 && p.GPUMilli < wholeMilli }

// ComputePercent is the share of each GPU the pod asks for, in percent
// (100 for whole GPUs, 0 without GPUs), rounded up so a pod never asks for
// less than the trace says.
func (p PodSpec) ComputePercent() int {
	if p.NumGPU == 0 {
		return 0
	}
	return (p.GPUMilli + 9) / 10
}

var (
	nodeColumns = []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}
	podColumns  = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}
)

// LoadNodes reads a node CSV file. Errors name the file and line.
func LoadNodes(path string) ([]NodeSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open node list: %w", err)
	}
	defer f.Close()
	return ReadNodes(f, path)
}

// ReadNodes is LoadNodes over a reader; name is used in errors.
func ReadNodes(rd io.Reader, name string) ([]NodeSpec, error) {
	var nodes []NodeSpec
	seen := map[string]int{}
	err := scan(rd, name, nodeColumns, func(r *row) error {
		n, err := parseNode(r, seen)
		nodes = append(nodes, n)
		return err
	})
	if err != nil {
		return nil, err
	}
	return nodes, nil
}

// parseNode reads one node row; seen maps names to their first line.
func parseNode(r *row, seen map[string]int) (NodeSpec, error) {
	n := NodeSpec{
		Name:      r.str("sn"),
		CPUMilli:  r.num("cpu_milli", 0, maxMilli),
		MemoryMiB: r.num("memory_mib", 0, maxMilli),
		GPUs:      int(r.num("gpu", 0, maxGPUs)),
		Model:     r.str("model"),
	}
	switch prev, dup := seen[n.Name]; {
	case n.Name == "":
		r.fail("column sn: empty node name")
	case dup:
		r.fail("node %q already defined on line %d", n.Name, prev)
	case n.GPUs > 0 && n.Model == "":
		r.fail("column model: empty, but the node has %d GPUs", n.GPUs)
	}
	seen[n.Name] = r.line
	return n, r.err
}

// LoadPods reads a pod CSV file, full or reduced (without gpu_spec).
// Errors name the file and line.
func LoadPods(path string) ([]PodSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open pod list: %w", err)
	}
	defer f.Close()
	return ReadPods(f, path)
}

// ReadPods is LoadPods over a reader; name is used in errors.
func ReadPods(rd io.Reader, name string) ([]PodSpec, error) {
	var pods []PodSpec
	err := scan(rd, name, podColumns, func(r *row) error {
		p, err := parsePod(r)
		pods = append(pods, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return pods, nil
}

func parsePod(r *row) (PodSpec, error) {
	p := PodSpec{
		Name:      r.str("name"),
		CPUMilli:  r.num("cpu_milli", 0, maxMilli),
		MemoryMiB: r.num("memory_mib", 0, maxMilli),
		NumGPU:    int(r.num("num_gpu", 0, maxGPUs)),
		GPUMilli:  int(r.num("gpu_milli", 0, wholeMilli)),
		GPUSpec:   parseGPUSpec(r.str("gpu_spec")),
	}
	switch {
	case p.Name == "":
		r.fail("column name: empty pod name")
	case p.NumGPU == 0:
		p.GPUMilli = 0 // CPU-only: the trace's value carries no meaning
	case p.GPUMilli == 0:
		r.fail("column gpu_milli: 0 with num_gpu %d", p.NumGPU)
	case p.NumGPU > 1 && p.GPUMilli < wholeMilli:
		r.fail("column gpu_milli: fraction %d of a GPU needs num_gpu 1, have %d", p.GPUMilli, p.NumGPU)
	}
	return p, r.err
}

// parseGPUSpec splits "V100M16|V100M32" into distinct models, in order.
func parseGPUSpec(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for m := range strings.SplitSeq(s, "|") {
		m = strings.TrimSpace(m)
		if m != "" && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// String renders a pod as a short line for logs and errors.
func (p PodSpec) String() string {
	return fmt.Sprintf("%s (cpu %d, mem %d MiB, gpu %d×%d‰)", p.Name, p.CPUMilli, p.MemoryMiB, p.NumGPU, p.GPUMilli)
}
