package command

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/cli"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// resolveJob finds the one job whose ID is id or starts with id. When
// none or several match it prints why and returns ok false.
func resolveJob(ctx context.Context, ui cli.Ui, client *api.Client, id string) (*structs.JobListStub, bool) {
	jobs, _, err := client.Jobs().PrefixList(ctx, id)
	if err != nil {
		ui.Error(fmt.Sprintf("Error listing jobs: %s", err))
		return nil, false
	}
	match, matches := pickByPrefix(jobs, id)
	switch {
	case match != nil:
		return match, true
	case len(matches) == 0:
		ui.Error(fmt.Sprintf("No job(s) with prefix or ID %q found", id))
	default:
		ui.Error(fmt.Sprintf("Prefix %q matched multiple jobs:\n\n%s", id, formatJobList(matches)))
	}
	return nil, false
}

// pickByPrefix returns the job with ID id, else the only job whose ID
// starts with id, else nil and every job that starts with id.
func pickByPrefix(jobs []*structs.JobListStub, id string) (*structs.JobListStub, []*structs.JobListStub) {
	var matches []*structs.JobListStub
	for _, j := range jobs {
		if j.ID == id {
			return j, nil
		}
		if strings.HasPrefix(j.ID, id) {
			matches = append(matches, j)
		}
	}
	if len(matches) == 1 {
		return matches[0], nil
	}
	return nil, matches
}
