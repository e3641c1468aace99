package feasible

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/droverhq/drover/structs"
)

// This file holds the GPU sharing rules a slice request (memory and/or
// compute of one GPU) meets, per instance, by the node's sharing mode
// (the instance's "sharing" attribute, structs.SharingMode):
//
//	exclusive      no slice; "no GPU allows sharing (mode exclusive)"
//	mps            slices, summed to at most one GPU (DeviceFit.slices)
//	time-slicing   the same, accounted but not enforced on the GPU
//	(unsaid)       the same: nodes that predate sharing modes
//	mig            the smallest free MIG instance whose memory and compute
//	               hold the request, taken whole (allocatedDevices records
//	               no slice for it)
//
// When both a MIG instance and a shared GPU could take the slice, the MIG
// instance wins: its isolation is the hardware's.

// sliceScan sorts the instances a slice request meets on one node by
// their sharing mode. DeviceFit.slices asks it about every healthy
// instance the allocation has not already taken.
type sliceScan struct {
	shared    int // instances that take slices (mps, time-slicing, unsaid)
	exclusive int
	migs      int           // MIG instances seen
	migBig    int           // of them, big enough for the request
	migFree   []instanceRef // of them, free as well
}

// admit reports whether the slice path may consider r: an instance that
// takes slices. Exclusive instances are counted and skipped; MIG
// instances are counted and, when free and big enough, kept for pickMIG.
func (s *sliceScan) admit(c *Candidate, r instanceRef, req *structs.RequestedDevice) bool {
	switch mode := r.group.SharingMode(r.inst); {
	case structs.SharesSlices(mode):
		s.shared++
		return true
	case mode == structs.SharingMIG:
		s.migs++
		if migHolds(r, req.Compute, req.MemoryMB) {
			s.migBig++
			if c.Usage.Devices[r.inst.ID].Free() {
				s.migFree = append(s.migFree, r)
			}
		}
	default:
		s.exclusive++
	}
	return false
}

// migHolds reports whether MIG instance r has the memory and compute a
// slice request asks (compute 0: any). A request for compute on an
// instance whose share is unknown does not fit.
func migHolds(r instanceRef, compute int, memMB uint64) bool {
	if memMB > 0 && (r.memMB == 0 || r.memMB < memMB) {
		return false
	}
	return structs.MIGCompute(r.inst, r.group) >= compute
}

// pickMIG returns the smallest free MIG instance that holds the request
// (least memory, then least compute, then lowest ID), or nil when none
// does or need is not 1 (a slice request asks for one GPU).
func (s *sliceScan) pickMIG(need int) []instanceRef {
	if len(s.migFree) == 0 || need != 1 {
		return nil
	}
	best := slices.MinFunc(s.migFree, func(x, y instanceRef) int {
		return cmp.Or(
			cmp.Compare(x.memMB, y.memMB),
			cmp.Compare(structs.MIGCompute(x.inst, x.group), structs.MIGCompute(y.inst, y.group)),
			cmp.Compare(x.inst.ID, y.inst.ID),
		)
	})
	return []instanceRef{best}
}

// reason says why no instance took the slice when no instance of the node
// takes slices at all, and "" when some does, so that the slice path's
// own reasons (GPU memory, compute) explain.
func (s *sliceScan) reason(req *structs.RequestedDevice) string {
	name, compute, memMB := req.Name, req.Compute, req.MemoryMB
	switch {
	case s.shared > 0:
		return ""
	case s.migs > 0 && s.migBig == 0:
		return fmt.Sprintf("devices: %s: no MIG instance has %s", name, sliceSize(compute, memMB))
	case s.migs > 0:
		return fmt.Sprintf("devices: %s: every MIG instance with %s is held", name, sliceSize(compute, memMB))
	case s.exclusive > 0:
		return fmt.Sprintf("devices: %s: no GPU allows sharing (mode %s)", name, structs.SharingExclusive)
	}
	return ""
}

// sliceSize renders what a slice asks: "20 GiB", "25% compute" or both.
func sliceSize(compute int, memMB uint64) string {
	switch {
	case memMB > 0 && compute > 0:
		return fmt.Sprintf("%s and %d%% compute", structs.FormatBytes(memMB<<20), compute)
	case memMB > 0:
		return structs.FormatBytes(memMB << 20)
	}
	return fmt.Sprintf("%d%% compute", max(compute, 1))
}

// heldWhole reports whether an allocation choosing r for a slice request
// holds r whole: a MIG instance is never sliced.
func heldWhole(r instanceRef) bool {
	return r.group.SharingMode(r.inst) == structs.SharingMIG
}
