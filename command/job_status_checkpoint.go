package command

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/droverhq/drover/structs"
)

// formatCheckpoints renders the "Checkpoints" section of job status:
// each task that reported a checkpoint (structs.TaskState's
// LastCheckpoint), newest allocation first; none when no task did.
func formatCheckpoints(now time.Time, allocs []*structs.AllocListStub, verbose bool) []string {
	var rows [][]string
	allocs = slices.Clone(allocs)
	slices.SortStableFunc(allocs, func(a, b *structs.AllocListStub) int {
		return cmp.Or(cmp.Compare(b.CreateIndex, a.CreateIndex), strings.Compare(a.Name, b.Name))
	})
	for _, a := range allocs {
		for _, task := range sortedKeys(a.TaskStates) {
			ts := a.TaskStates[task]
			if ts == nil || ts.LastCheckpoint == 0 {
				continue
			}
			rows = append(rows, []string{shortID(a.ID, verbose), a.Name, task, formatAgo(now, ts.LastCheckpoint)})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	return []string{"Checkpoints\n" + formatTable([]string{"Alloc ID", "Name", "Task", "Last Checkpoint"}, rows)}
}
