package server

import (
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// watchFixture is a job at version 1 with a running deployment of one
// group of two allocations and one canary, and a stable version 0.
func watchFixture() (*structs.Deployment, *structs.Job, *structs.Job) {
	job := &structs.Job{ID: "web", Namespace: "default", Version: 1, CreateIndex: 5, Type: structs.JobTypeService}
	stable := &structs.Job{ID: "web", Namespace: "default", Version: 0, Stable: true}
	d := structs.NewDeployment(job, 0)
	d.TaskGroups["web"] = &structs.DeploymentState{DesiredTotal: 2, DesiredCanaries: 1, AutoRevert: true,
		ProgressDeadline: time.Minute, RequireProgressBy: time.Unix(1000, 0)}
	return d, job, stable
}

func deployAlloc(d *structs.Deployment, job *structs.Job, canary bool, health *bool) *structs.Allocation {
	return &structs.Allocation{ID: structs.GenerateUUID(), TaskGroup: "web", Job: job, DeploymentID: d.ID,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
		DeploymentStatus: &structs.AllocDeploymentStatus{Canary: canary, Healthy: health}}
}

func TestDecideDeployment(t *testing.T) {
	yes, no := true, false
	at := time.Unix(900, 0)
	tests := []struct {
		name  string
		setup func(d *structs.Deployment, job *structs.Job) []*structs.Allocation
		now   time.Time
		want  string // status, "promote", or "" for nothing
		desc  string // a substring of the description
	}{
		{"canary pending", func(d *structs.Deployment, j *structs.Job) []*structs.Allocation {
			return []*structs.Allocation{deployAlloc(d, j, true, nil)}
		}, at, "", ""},
		{"canary healthy, manual promotion waits past the deadline", func(d *structs.Deployment, j *structs.Job) []*structs.Allocation {
			return []*structs.Allocation{deployAlloc(d, j, true, &yes)}
		}, time.Unix(2000, 0), "", ""},
		{"canary healthy, auto_promote", func(d *structs.Deployment, j *structs.Job) []*structs.Allocation {
			d.TaskGroups["web"].AutoPromote = true
			return []*structs.Allocation{deployAlloc(d, j, true, &yes)}
		}, at, "promote", ""},
		{"unhealthy: failed, reverted", func(d *structs.Deployment, j *structs.Job) []*structs.Allocation {
			return []*structs.Allocation{deployAlloc(d, j, true, &no)}
		}, at, structs.DeploymentStatusFailed, "Failed due to unhealthy allocations - rolling back to job version 0"},
		{"progress deadline", func(d *structs.Deployment, j *structs.Job) []*structs.Allocation {
			return []*structs.Allocation{deployAlloc(d, j, true, nil)}
		}, time.Unix(1001, 0), structs.DeploymentStatusFailed, "Failed due to progress deadline"},
		{"promoted, all healthy", func(d *structs.Deployment, j *structs.Job) []*structs.Allocation {
			d.TaskGroups["web"].Promoted = true
			return []*structs.Allocation{deployAlloc(d, j, true, &yes), deployAlloc(d, j, false, &yes)}
		}, at, structs.DeploymentStatusSuccessful, "completed successfully"},
		{"promoted, an old allocation left", func(d *structs.Deployment, j *structs.Job) []*structs.Allocation {
			d.TaskGroups["web"].Promoted = true
			old := deployAlloc(d, &structs.Job{ID: "web", Version: 0}, false, nil)
			old.DeploymentID = ""
			return []*structs.Allocation{deployAlloc(d, j, true, &yes), deployAlloc(d, j, false, &yes), old}
		}, at, "", ""},
		{"newer job", func(d *structs.Deployment, j *structs.Job) []*structs.Allocation {
			j.Version = 2
			return nil
		}, at, structs.DeploymentStatusCancelled, "newer version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, job, stable := watchFixture()
			allocs := tt.setup(d, job)
			act := decideDeployment(d, job, allocs, stable, tt.now)
			got := ""
			switch {
			case act == nil:
			case act.promote:
				got = "promote"
			default:
				got = act.status
			}
			if got != tt.want {
				t.Fatalf("got %q (%+v), want %q", got, act, tt.want)
			}
			if act != nil && !strings.Contains(act.desc, tt.desc) {
				t.Errorf("description %q, want %q in it", act.desc, tt.desc)
			}
			if tt.want == structs.DeploymentStatusSuccessful && !act.markStable {
				t.Error("success does not mark the version stable")
			}
			if strings.Contains(tt.desc, "rolling back") && (act.revertTo == nil || act.revertTo.Version != 0) {
				t.Errorf("revertTo = %+v, want version 0", act.revertTo)
			}
		})
	}
}

func TestDecideDeploymentNoStableVersion(t *testing.T) {
	d, job, _ := watchFixture()
	no := false
	act := decideDeployment(d, job, []*structs.Allocation{deployAlloc(d, job, true, &no)}, nil, time.Unix(900, 0))
	if act == nil || act.revertTo != nil || !strings.Contains(act.desc, "no stable job version to auto revert to") {
		t.Errorf("got %+v, want failed without a revert", act)
	}
}
