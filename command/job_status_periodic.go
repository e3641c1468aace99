package command

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// readChildren lists the periodic or dispatched children of a parent job.
func readChildren(ctx context.Context, client *api.Client, job *structs.Job) ([]*structs.JobListStub, error) {
	if !job.IsParent() {
		return nil, nil
	}
	stubs, _, err := client.Jobs().List(ctx, &api.QueryOptions{Namespace: job.Namespace, Prefix: job.ID + "/"})
	if err != nil {
		return nil, fmt.Errorf("children of %q: %w", job.ID, err)
	}
	out := stubs[:0]
	for _, s := range stubs {
		if s.ParentID == job.ID {
			out = append(out, s)
		}
	}
	return out, nil
}

// parentKV is the periodic and parameterized lines of a job's details.
func parentKV(now time.Time, j *structs.Job) []kv {
	var out []kv
	if j.IsPeriodic() {
		out = append(out, kv{"Periodic", "true"})
		if j.IsPeriodicActive() {
			next, err := j.Periodic.Next(now)
			switch {
			case err != nil:
				out = append(out, kv{"Next Periodic Launch", "<invalid: " + err.Error() + ">"})
			case next.IsZero():
				out = append(out, kv{"Next Periodic Launch", "<none>"})
			default:
				out = append(out, kv{"Next Periodic Launch", fmt.Sprintf("%s (%s from now)",
					next.UTC().Format(time.RFC3339), next.Sub(now).Round(time.Second))})
			}
		}
	}
	if j.IsParameterized() {
		out = append(out, kv{"Parameterized", "true"})
	}
	if j.ParentID != "" {
		out = append(out, kv{"Parent ID", j.ParentID})
	}
	return out
}

// parentSections renders the parameterized block and the children.
func parentSections(j *structs.Job, children []*structs.JobListStub) []string {
	if !j.IsParent() {
		return nil
	}
	var sections []string
	if p := j.ParameterizedJob; j.IsParameterized() {
		sections = append(sections, "Parameterized Job\n"+formatKV([]kv{
			{"Payload", p.Payload},
			{"Required Metadata", strings.Join(p.MetaRequired, ", ")},
			{"Optional Metadata", strings.Join(p.MetaOptional, ", ")},
		}))
	}
	title := "Previously Launched Jobs"
	if j.IsParameterized() {
		title = "Dispatched Jobs"
	}
	if len(children) == 0 {
		return append(sections, title+"\nNo instances of the job")
	}
	rows := make([][]string, len(children))
	for i, c := range children {
		rows[i] = []string{c.ID, c.Status, formatTime(c.SubmitTime)}
	}
	return append(sections, title+"\n"+formatTable([]string{"ID", "Status", "Submit Date"}, rows))
}

// nextLaunchLine is what job run says of a periodic job ("" for others).
func nextLaunchLine(now time.Time, j *structs.Job) string {
	if !j.IsPeriodicActive() {
		return ""
	}
	next, err := j.Periodic.Next(now)
	if err != nil || next.IsZero() {
		return ""
	}
	return fmt.Sprintf("Approximate next launch time: %s (%s from now)", next.UTC().Format(time.RFC3339), next.Sub(now).Round(time.Second))
}
