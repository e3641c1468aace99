package command

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/cli"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// deploymentMonitor follows the deployment of a job version after its
// evaluation, as Nomad's `job run` does: it prints the deployment's
// table each time it changes and returns when the deployment ends, or
// waits for a manual promotion with its canaries healthy.
type deploymentMonitor struct {
	ui        cli.Ui
	client    *api.Client
	namespace string
	verbose   bool
	// poll is how long one blocking read waits.
	poll time.Duration
}

// monitor follows the job's deployment of jobModifyIndex. It returns
// exitPlaced when it succeeded (or waits for promotion, or there is
// none), exitNotPlaced when it failed or was cancelled.
func (m *deploymentMonitor) monitor(ctx context.Context, jobID string, jobModifyIndex uint64) int {
	q := &api.QueryOptions{Namespace: m.namespace, WaitTime: m.poll}
	var last string
	for {
		d, meta, err := m.client.Jobs().LatestDeployment(ctx, jobID, q)
		if err != nil {
			m.ui.Error(fmt.Sprintf("Error reading the deployment of job %q: %s", jobID, err))
			return exitError
		}
		if d == nil || d.JobSpecModifyIndex != jobModifyIndex {
			return exitPlaced // no deployment for this version
		}
		if out := formatDeployment(d, m.verbose); out != last {
			m.ui.Output(out)
			last = out
		}
		switch {
		case d.Status == structs.DeploymentStatusSuccessful:
			return exitPlaced
		case !d.Active():
			return exitNotPlaced
		case d.RequiresPromotion() && !d.HasAutoPromote() && canariesPlacedHealthy(d):
			m.ui.Output(fmt.Sprintf("==> Deployment %q waits for promotion: drover deployment promote %s", shortID(d.ID, m.verbose), shortID(d.ID, m.verbose)))
			return exitPlaced
		}
		q.WaitIndex = meta.LastIndex
		if err := ctx.Err(); err != nil {
			return exitError
		}
	}
}

// canariesPlacedHealthy reports whether every group wanting canaries has
// them all healthy.
func canariesPlacedHealthy(d *structs.Deployment) bool {
	for _, s := range d.TaskGroups {
		if s.DesiredCanaries > 0 && !s.Promoted && s.HealthyAllocs < s.DesiredCanaries {
			return false
		}
	}
	return true
}

// formatDeployment renders a deployment as Nomad's monitor and
// `deployment status` do: its details and a table per group.
func formatDeployment(d *structs.Deployment, verbose bool) string {
	head := formatKV([]kv{
		{"ID", shortID(d.ID, verbose)},
		{"Job ID", d.JobID},
		{"Job Version", strconv.FormatUint(d.JobVersion, 10)},
		{"Status", d.Status},
		{"Description", d.StatusDescription},
	})
	canaries := false
	for _, s := range d.TaskGroups {
		canaries = canaries || s.DesiredCanaries > 0
	}
	headers := []string{"Task Group", "Auto Revert"}
	if canaries {
		headers = append(headers, "Promoted")
	}
	headers = append(headers, "Desired")
	if canaries {
		headers = append(headers, "Canaries")
	}
	headers = append(headers, "Placed", "Healthy", "Unhealthy", "Progress Deadline")
	var rows [][]string
	for _, name := range sortedKeys(d.TaskGroups) {
		s := d.TaskGroups[name]
		row := []string{name, strconv.FormatBool(s.AutoRevert)}
		if canaries {
			row = append(row, strconv.FormatBool(s.Promoted))
		}
		row = append(row, strconv.Itoa(s.DesiredTotal))
		if canaries {
			row = append(row, strconv.Itoa(s.DesiredCanaries))
		}
		deadline := "<none>"
		if !s.RequireProgressBy.IsZero() {
			deadline = s.RequireProgressBy.Local().Format(time.RFC3339)
		}
		row = append(row, strconv.Itoa(s.PlacedAllocs), strconv.Itoa(s.HealthyAllocs), strconv.Itoa(s.UnhealthyAllocs), deadline)
		rows = append(rows, row)
	}
	return head + "\n\nDeployed\n" + formatTable(headers, rows)
}
