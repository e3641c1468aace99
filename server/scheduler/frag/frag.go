// Package frag measures GPU fragmentation the way "Beware of
// Fragmentation" (Weng et al., USENIX ATC '23) defines it: the free GPU
// capacity of a node that a task drawn from the expected workload could
// not use. It is pure arithmetic over free capacities and a workload
// distribution; it knows nothing of nodes, allocations or the state
// store. The scheduler's fragmentation-aware ranking and the simulator's
// report both use it.
package frag

import (
	"cmp"
	"slices"
)

// Whole is one GPU in the percent units GPU shares use.
const Whole = 100

// Shape is one kind of GPU task: GPUs whole GPUs, or, when GPUs is 1 and
// Compute is below Whole, a slice of one GPU. CPU and MemoryMB are the
// typical host resources such a task asks for. Weight is its share of the
// workload (the weights of a Workload sum to 1).
type Shape struct {
	GPUs     int
	Compute  int // percent of one GPU per GPU asked
	CPU      int64
	MemoryMB int64
	Weight   float64
}

// fractional reports whether the shape asks for a slice of one GPU.
func (s Shape) fractional() bool { return s.GPUs <= 1 && s.Compute < Whole }

// Workload is the expected mix of GPU tasks.
type Workload []Shape

// Key identifies a shape by its GPU ask.
type Key struct {
	GPUs    int
	Compute int
}

// Tally counts the GPU asks seen, to build a Workload from.
type Tally struct {
	n   map[Key]*acc
	sum int
}

type acc struct {
	count         int
	cpu, memoryMB int64
}

// Add counts one task asking gpus GPUs of compute percent each (a whole
// GPU when compute is 0 or Whole), with its host resources. Tasks that
// ask for no GPU are not counted: they use no GPU, so no GPU is a
// fragment for them.
func (t *Tally) Add(gpus, compute int, cpu, memoryMB int64) { t.count(gpus, compute, cpu, memoryMB, 1) }

// Remove takes back one task counted by Add with the same arguments.
func (t *Tally) Remove(gpus, compute int, cpu, memoryMB int64) {
	t.count(gpus, compute, cpu, memoryMB, -1)
}

func (t *Tally) count(gpus, compute int, cpu, memoryMB int64, sign int) {
	if gpus <= 0 {
		return
	}
	if compute <= 0 || compute > Whole || gpus > 1 {
		compute = Whole
	}
	if t.n == nil {
		t.n = map[Key]*acc{}
	}
	k := Key{GPUs: gpus, Compute: compute}
	a := t.n[k]
	if a == nil {
		if sign < 0 {
			return
		}
		a = &acc{}
		t.n[k] = a
	}
	a.count += sign
	a.cpu += int64(sign) * cpu
	a.memoryMB += int64(sign) * memoryMB
	t.sum += sign
	if a.count <= 0 {
		t.sum -= a.count
		delete(t.n, k)
	}
}

// Copy returns a tally that counts on independently of t.
func (t *Tally) Copy() *Tally {
	c := &Tally{sum: t.sum, n: make(map[Key]*acc, len(t.n))}
	for k, a := range t.n {
		cp := *a
		c.n[k] = &cp
	}
	return c
}

// Len is the number of tasks counted.
func (t *Tally) Len() int { return t.sum }

// Workload returns the distribution of the tasks counted, each shape
// with the mean host resources of its tasks, ordered by GPU ask.
func (t *Tally) Workload() Workload {
	w := make(Workload, 0, len(t.n))
	for k, a := range t.n {
		w = append(w, Shape{
			GPUs: k.GPUs, Compute: k.Compute,
			CPU: a.cpu / int64(a.count), MemoryMB: a.memoryMB / int64(a.count),
			Weight: float64(a.count) / float64(t.sum),
		})
	}
	slices.SortFunc(w, func(a, b Shape) int {
		return cmp.Or(cmp.Compare(a.GPUs, b.GPUs), cmp.Compare(a.Compute, b.Compute))
	})
	return w
}

// NodeFree is what a node has left: host resources and the free percent
// of each healthy GPU (0 to Whole).
type NodeFree struct {
	CPU, MemoryMB int64
	GPUs          []int
}

// Node returns the node's expected fragmentation under w, in GPUs: the
// weighted mean over shapes of the free GPU capacity a task of that shape
// could not use. For a shape that does not fit the node at all (host
// resources, or too few GPUs with room) that is all the free capacity;
// for a slice, the GPUs with less free than the slice; for whole GPUs,
// the partly used GPUs.
func Node(n NodeFree, w Workload) float64 {
	total, whole := 0, 0
	for _, f := range n.GPUs {
		total += f
		if f >= Whole {
			whole++
		}
	}
	if total == 0 {
		return 0
	}
	sum := 0.0
	for _, s := range w {
		sum += s.Weight * float64(forShape(n, s, total, whole))
	}
	return sum / Whole
}

// forShape is the free capacity (percent units) a task of shape s could
// not use on n; total and whole are n's free capacity and fully free GPUs.
func forShape(n NodeFree, s Shape, total, whole int) int {
	if s.CPU > n.CPU || s.MemoryMB > n.MemoryMB {
		return total
	}
	if s.fractional() {
		frag, fits := 0, false
		for _, f := range n.GPUs {
			if f < s.Compute {
				frag += f
			} else {
				fits = true
			}
		}
		if !fits {
			return total
		}
		return frag
	}
	if whole < s.GPUs {
		return total
	}
	return total - whole*Whole
}
