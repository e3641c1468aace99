package frag

import (
	"math"
	"testing"
)

func TestNode(t *testing.T) {
	half := Shape{GPUs: 1, Compute: 50, CPU: 4, MemoryMB: 8, Weight: 1}
	two := Shape{GPUs: 2, Compute: Whole, CPU: 4, MemoryMB: 8, Weight: 1}
	tests := []struct {
		name string
		node NodeFree
		w    Workload
		want float64
	}{
		{"empty node, whole asks", NodeFree{CPU: 64, MemoryMB: 64, GPUs: []int{100, 100}}, Workload{two}, 0},
		{"one whole free, two asked", NodeFree{CPU: 64, MemoryMB: 64, GPUs: []int{100, 0}}, Workload{two}, 1},
		{"partly used GPU is a fragment for whole asks", NodeFree{CPU: 64, MemoryMB: 64, GPUs: []int{100, 100, 30}}, Workload{two}, 0.3},
		{"slice: GPUs with less free than asked", NodeFree{CPU: 64, MemoryMB: 64, GPUs: []int{40, 60, 100}}, Workload{half}, 0.4},
		{"slice fits nowhere: all free", NodeFree{CPU: 64, MemoryMB: 64, GPUs: []int{40, 30}}, Workload{half}, 0.7},
		{"host resources exhausted: all free", NodeFree{CPU: 2, MemoryMB: 64, GPUs: []int{100, 100}}, Workload{half}, 2},
		{"weighted mean", NodeFree{CPU: 64, MemoryMB: 64, GPUs: []int{100, 40}},
			Workload{{GPUs: 1, Compute: 50, Weight: 0.5}, {GPUs: 2, Compute: Whole, Weight: 0.5}}, 0.5*0.4 + 0.5*1.4},
		{"no free GPU", NodeFree{CPU: 64, MemoryMB: 64, GPUs: []int{0, 0}}, Workload{half}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Node(tt.node, tt.w); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("Node() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTallyWorkload(t *testing.T) {
	var tl Tally
	tl.Add(1, 50, 4, 100)
	tl.Add(1, 50, 8, 300)
	tl.Add(2, 0, 16, 0)
	tl.Add(0, 0, 99, 99) // no GPU: not counted
	tl.Add(4, 30, 1, 1)  // several GPUs are whole GPUs
	w := tl.Workload()
	if tl.Len() != 4 || len(w) != 3 {
		t.Fatalf("got %d tasks in %d shapes, want 4 in 3", tl.Len(), len(w))
	}
	if got := w[0]; got.GPUs != 1 || got.Compute != 50 || got.CPU != 6 || got.MemoryMB != 200 || got.Weight != 0.5 {
		t.Errorf("first shape = %+v, want 1 GPU at 50%%, cpu 6, memory 200, weight 0.5", got)
	}
	if got := w[2]; got.GPUs != 4 || got.Compute != Whole {
		t.Errorf("last shape = %+v, want 4 whole GPUs", got)
	}
}
