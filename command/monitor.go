package command

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/cli"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// monitorWait is how long each blocking query of the monitor waits.
const monitorWait = 30 * time.Second

// evalMonitor follows an evaluation with blocking queries until the
// scheduler is done with it, then reports what was placed and what not.
type evalMonitor struct {
	ui        cli.Ui
	client    *api.Client
	namespace string
	verbose   bool
}

// monitor follows evalID (and the evaluations it chains to) and returns
// exitPlaced, exitNotPlaced or exitError.
func (m *evalMonitor) monitor(ctx context.Context, evalID string) int {
	for {
		eval, code := m.waitDone(ctx, evalID)
		if eval == nil {
			return code
		}
		code = m.report(ctx, eval)
		if eval.NextEval == "" || code != exitPlaced {
			return code
		}
		if eval.Wait > 0 {
			m.ui.Output(fmt.Sprintf("    Evaluation %q delayed by %s", shortID(eval.NextEval, m.verbose), eval.Wait))
		}
		m.ui.Output(fmt.Sprintf("==> Following evaluation %q", shortID(eval.NextEval, m.verbose)))
		evalID = eval.NextEval
	}
}

// waitDone blocks until evalID is terminal (or blocked) and returns it;
// on error or interruption it returns nil and the exit code.
func (m *evalMonitor) waitDone(ctx context.Context, evalID string) (*structs.Evaluation, int) {
	var index uint64
	status := ""
	for {
		q := &api.QueryOptions{Namespace: m.namespace, WaitIndex: index, WaitTime: monitorWait}
		eval, meta, err := m.client.Evaluations().Info(ctx, evalID, q)
		switch {
		case ctx.Err() != nil:
			m.ui.Output(fmt.Sprintf("==> Monitoring interrupted; evaluation %q continues on the servers", shortID(evalID, m.verbose)))
			return nil, exitPlaced
		case err != nil:
			m.ui.Error(fmt.Sprintf("Error reading evaluation %q: %s", evalID, err))
			return nil, exitError
		case eval.ID != evalID:
			// Following an answer about some other evaluation (or none)
			// would wait forever for a status it never reaches.
			m.ui.Error(fmt.Sprintf("Error reading evaluation %q: the agent answered with evaluation %q", evalID, eval.ID))
			return nil, exitError
		}
		if eval.Status != status {
			if status != "" {
				m.ui.Output(fmt.Sprintf("    Evaluation status changed: %q -> %q", status, eval.Status))
			}
			status = eval.Status
		}
		if eval.TerminalStatus() || eval.Status == structs.EvalStatusBlocked {
			return eval, exitPlaced
		}
		// An index that does not move would turn the loop into polling
		// without a wait; 1 still blocks, since any state is past it.
		index = max(meta.LastIndex, index, 1)
	}
}

// report prints the allocations eval placed and why others were not
// placed, and returns the exit code.
func (m *evalMonitor) report(ctx context.Context, eval *structs.Evaluation) int {
	allocs, _, err := m.client.Evaluations().Allocations(ctx, eval.ID, &api.QueryOptions{Namespace: m.namespace})
	if err != nil {
		m.ui.Error(fmt.Sprintf("Error reading allocations of evaluation %q: %s", eval.ID, err))
		return exitError
	}
	for _, line := range allocLines(eval, allocs, m.verbose) {
		m.ui.Output("    " + line)
	}
	code := exitPlaced
	if eval.Status != structs.EvalStatusComplete {
		m.ui.Output(fmt.Sprintf("==> Evaluation %q finished with status %q%s", shortID(eval.ID, m.verbose), eval.Status, describe(eval.StatusDescription)))
		code = exitNotPlaced
	}
	if len(eval.FailedTGAllocs) > 0 {
		m.ui.Output("==> Failed to place all allocations:")
		for _, line := range placementFailures(eval.FailedTGAllocs) {
			m.ui.Output("    " + line)
		}
		if eval.BlockedEval != "" {
			for _, line := range blockedNote(eval.BlockedEval, eval.FailedTGAllocs, m.verbose) {
				m.ui.Output("    " + line)
			}
		}
		return exitNotPlaced
	}
	if code == exitPlaced {
		m.ui.Output(fmt.Sprintf("==> Evaluation %q finished with status %q", shortID(eval.ID, m.verbose), eval.Status))
	}
	return code
}

// allocLines describes the allocations an evaluation created or changed:
// "Allocation 1a2b3c4d created: node 5e6f7a8b, group train, GPUs GPU-...".
// GPU UUIDs are printed in full: they are what the task sees.
func allocLines(eval *structs.Evaluation, allocs []*structs.AllocListStub, verbose bool) []string {
	allocs = slices.Clone(allocs)
	slices.SortFunc(allocs, func(a, b *structs.AllocListStub) int { return strings.Compare(a.Name, b.Name) })
	var lines []string
	for _, a := range allocs {
		verb := "created"
		if a.CreateIndex < eval.CreateIndex || a.DesiredStatus == structs.AllocDesiredStatusStop {
			verb = "modified"
			if a.DesiredStatus == structs.AllocDesiredStatusStop {
				verb = "stopped"
			}
		}
		lines = append(lines, fmt.Sprintf("Allocation %s %s: node %s, group %s, GPUs %s",
			shortID(a.ID, verbose), verb, shortID(a.NodeID, verbose), a.TaskGroup, gpuList(allocatedGPUs(a.AllocatedResources), true)))
	}
	return lines
}

func describe(desc string) string {
	if desc == "" {
		return ""
	}
	return ": " + desc
}
