package command

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestFormatParentJobStatus(t *testing.T) {
	periodic := testJob()
	periodic.Periodic = &structs.PeriodicConfig{Enabled: true, Spec: "0 13 * * *", TimeZone: "UTC", SpecType: "cron"}
	param := testJob()
	param.ParameterizedJob = &structs.ParameterizedJobConfig{Payload: "required", MetaRequired: []string{"scene"}, MetaOptional: []string{"q"}}
	child := &structs.JobListStub{ID: "train/periodic-1772366400", ParentID: "train", Status: "dead", SubmitTime: hourAgo}
	tests := []struct {
		name     string
		st       *jobStatus
		want     []string
		wantNone []string
	}{
		{"periodic", &jobStatus{Job: periodic, Children: []*structs.JobListStub{child}}, []string{
			"Periodic             = true",
			"Next Periodic Launch = 2026-03-01T13:00:00Z (1h0m0s from now)",
			"Previously Launched Jobs", "train/periodic-1772366400  dead",
		}, []string{"Parameterized Job"}},
		{"parameterized", &jobStatus{Job: param}, []string{
			"Parameterized = true", "Parameterized Job", "Payload           = required",
			"Required Metadata = scene", "Optional Metadata = q", "Dispatched Jobs\nNo instances of the job",
		}, []string{"Next Periodic Launch"}},
		{"plain", &jobStatus{Job: testJob()}, nil, []string{"Periodic", "Parameterized", "Launched", "Dispatched"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := formatJobStatus(testNow, tt.st, false)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.wantNone {
				if strings.Contains(got, w) {
					t.Errorf("output has %q:\n%s", w, got)
				}
			}
		})
	}
	if got := nextLaunchLine(testNow, periodic); got != "Approximate next launch time: 2026-03-01T13:00:00Z (1h0m0s from now)" {
		t.Errorf("nextLaunchLine = %q", got)
	}
}
