package command

import (
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

func TestFormatCheckpoints(t *testing.T) {
	now := time.Unix(10_000, 0)
	allocs := []*structs.AllocListStub{
		{ID: "aaaaaaaa-1111", Name: "train.w[0]", CreateIndex: 1, TaskStates: map[string]*structs.TaskState{
			"trainer": {LastCheckpoint: now.Add(-90 * time.Second).UnixNano()},
			"sidecar": {},
		}},
		{ID: "bbbbbbbb-2222", Name: "train.w[1]", CreateIndex: 2},
	}
	got := strings.Join(formatCheckpoints(now, allocs, false), "\n")
	if !strings.HasPrefix(got, "Checkpoints\n") || !strings.Contains(got, "train.w[0]") ||
		!strings.Contains(got, "trainer") || !strings.Contains(got, "1m30s ago") || strings.Contains(got, "sidecar") {
		t.Errorf("formatCheckpoints = %q, want one row for trainer, 1m30s ago", got)
	}
	if got := formatCheckpoints(now, allocs[1:], false); got != nil {
		t.Errorf("no checkpoints: %q, want no section", got)
	}
}
