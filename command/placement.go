package command

import (
	"fmt"
	"strings"

	"github.com/droverhq/drover/structs"
)

// placementFailures renders, for each task group in failed, why its
// allocations were not placed:
//
//	Task Group "train" (failed to place 1 allocation):
//	  * 3 nodes evaluated: 2 filtered, 1 exhausted
//	  * Constraint `${device.attr.memory} >= 100 GiB` filtered 2 nodes
//	  * Resources exhausted on 1 node: devices: nvidia/gpu: 2 of 8 free, need 5
func placementFailures(failed map[string]*structs.AllocMetric) []string {
	var lines []string
	for _, group := range sortedKeys(failed) {
		m := failed[group]
		if m == nil {
			m = &structs.AllocMetric{}
		}
		n := m.CoalescedFailures + 1
		lines = append(lines, fmt.Sprintf("Task Group %q (failed to place %s):", group, plural(n, "allocation")))
		if m.NodesEvaluated > 0 {
			lines = append(lines, fmt.Sprintf("  * %s evaluated: %d filtered, %d exhausted",
				plural(m.NodesEvaluated, "node"), m.NodesFiltered, m.NodesExhausted))
		}
		for _, r := range metricReasons(m) {
			lines = append(lines, "  * "+r)
		}
	}
	return lines
}

// metricReasons explains an AllocMetric: nodes that were not eligible,
// filtered (by class, constraint or other reason) or out of resources.
func metricReasons(m *structs.AllocMetric) []string {
	var out []string
	if m.NodesEvaluated == 0 && m.NodesFiltered == 0 && m.NodesExhausted == 0 && m.Gang == "" && m.Queue == "" {
		out = append(out, "No nodes were eligible for evaluation")
	}
	for _, dc := range sortedKeys(m.NodesAvailable) {
		if m.NodesAvailable[dc] == 0 {
			out = append(out, fmt.Sprintf("No nodes are available in datacenter %q", dc))
		}
	}
	for _, class := range sortedKeys(m.ClassFiltered) {
		out = append(out, fmt.Sprintf("Class %q filtered %s", class, plural(m.ClassFiltered[class], "node")))
	}
	for _, c := range sortedKeys(m.ConstraintFiltered) {
		out = append(out, fmt.Sprintf("Constraint `%s` filtered %s", c, plural(m.ConstraintFiltered[c], "node")))
	}
	counted := 0
	for _, dim := range sortedKeys(m.DimensionExhausted) {
		n := m.DimensionExhausted[dim]
		counted += n
		out = append(out, fmt.Sprintf("Resources exhausted on %s: %s", plural(n, "node"), dim))
	}
	if rest := m.NodesExhausted - counted; rest > 0 {
		out = append(out, fmt.Sprintf("Resources exhausted on %s", plural(rest, "node")))
	}
	for _, class := range sortedKeys(m.ClassExhausted) {
		out = append(out, fmt.Sprintf("Class %q exhausted on %s", class, plural(m.ClassExhausted[class], "node")))
	}
	for _, q := range m.QuotaExhausted {
		out = append(out, "Quota limit hit: "+q)
	}
	if m.Queue != "" {
		out = append(out, "Waiting in its queue: "+m.Queue)
	}
	if m.Gang != "" {
		out = append(out, "Waiting as a gang: "+m.Gang)
	}
	return out
}

// gpuWait tells what GPU shortage, if any, keeps placements from
// happening: busy is true when some node has enough matching GPUs that
// are held for now; short is true when GPUs are a reason but no node has
// enough matching ones (or a device constraint filtered nodes).
func gpuWait(failed map[string]*structs.AllocMetric) (busy, short bool) {
	for _, m := range failed {
		if m == nil {
			continue
		}
		for dim := range m.DimensionExhausted {
			switch {
			case !mentionsGPU(dim):
			case strings.Contains(dim, "node has"):
				short = true
			default:
				busy = true
			}
		}
		for c := range m.ConstraintFiltered {
			if mentionsGPU(c) {
				short = true
			}
		}
	}
	return busy, short
}

// quotaWait reports whether a quota held placements back.
func quotaWait(failed map[string]*structs.AllocMetric) bool {
	for _, m := range failed {
		if m != nil && len(m.QuotaExhausted) > 0 {
			return true
		}
	}
	return false
}

func mentionsGPU(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "gpu") || strings.Contains(s, "device")
}

// blockedNote says what happens to a blocked evaluation: it is retried
// when capacity (GPUs, when they are the reason) frees up.
func blockedNote(blockedEvalID string, failed map[string]*structs.AllocMetric, verbose bool) []string {
	lines := []string{fmt.Sprintf("Evaluation %q waiting for additional capacity to place remainder", shortID(blockedEvalID, verbose))}
	switch busy, short := gpuWait(failed); {
	case quotaWait(failed):
		lines = append(lines, "The job is waiting for its namespace's quota: it will be placed when the quota is raised or the namespace's allocations free enough of it.")
	case busy:
		lines = append(lines, "The job is waiting for GPUs: it will be placed when a node has enough matching GPUs free.")
	case short:
		lines = append(lines, "No ready node has enough GPUs that match the request: the job waits until one joins; check the device count and constraints.")
	}
	return lines
}

// contentionNote explains a blocked evaluation that no node was found
// wanting: the scheduler found room, but the job's plans lost to
// concurrent ones in every attempt. Empty for any other evaluation.
func contentionNote(blocked *structs.Evaluation, failed map[string]*structs.AllocMetric) []string {
	if blocked == nil || blocked.TriggeredBy != structs.EvalTriggerMaxPlans || len(failed) > 0 {
		return nil
	}
	return []string{"The scheduler found room, but other placements took it first in every attempt " +
		"(maximum plan attempts): the job is tried again within seconds."}
}
