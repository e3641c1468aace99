package command

import (
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestJobStatusShowsUI: job status shows the job's ui description and
// links, without terminal control characters.
func TestJobStatusShowsUI(t *testing.T) {
	job := &structs.Job{ID: "web", Name: "web", Type: "service", Status: "running",
		UI: &structs.JobUIConfig{Description: "Front\x1b[31mend", Links: []*structs.JobUILink{{Label: "Runbook", URL: "https://example.com/rb"}}}}
	out := formatJobStatus(time.Now(), &jobStatus{Job: job}, false)
	for _, want := range []string{"Description\nFront[31mend", "Runbook", "https://example.com/rb"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("status holds an escape character:\n%q", out)
	}
	plain := formatJobStatus(time.Now(), &jobStatus{Job: &structs.Job{ID: "x"}}, false)
	if strings.Contains(plain, "Description") {
		t.Errorf("a job without ui shows a Description section:\n%s", plain)
	}
}
