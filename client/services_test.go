package client

import (
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestCheckRestartRestartsRealTask: a script check that fails inside a
// running raw_exec task (run through the driver's exec) restarts the
// task per check_restart, with the event naming the check; the check
// results are served for the allocation.
func TestCheckRestartRestartsRealTask(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	c := startClient(t, testConfig(t, srv.addr()))
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r == 1 })

	a := batchAlloc(c.NodeID(), "sleep 600")
	a.Job.Type = structs.JobTypeService
	tg := a.Job.TaskGroups[0]
	tg.RestartPolicy = &structs.RestartPolicy{Attempts: 3, Interval: time.Minute, Mode: structs.RestartModeFail}
	tg.Tasks[0].Services = []*structs.Service{{Name: "web", Provider: structs.ServiceProviderNomad, TaskName: "t",
		Checks: []*structs.ServiceCheck{{Name: "alive", Type: structs.ServiceCheckScript, Command: "/bin/sh",
			Args: []string{"-c", "exit 2"}, TaskName: "t", Interval: time.Second, Timeout: 5 * time.Second,
			CheckRestart: &structs.CheckRestart{Limit: 2}}}}}
	srv.putAlloc(a)

	waitFor(t, "a restart signaled by the check", func() bool {
		got := srv.alloc(a.ID)
		if got == nil || got.TaskStates["t"] == nil {
			return false
		}
		for _, e := range got.TaskStates["t"].Events {
			if e.Type == "Restart Signaled" && e.Message == `healthcheck: check "alive" unhealthy` {
				return true
			}
		}
		return false
	})
	if healthy, known := c.Services().AllocChecksHealthy(a.ID); !known || healthy {
		t.Errorf("AllocChecksHealthy = %v, %v; want unhealthy and known", healthy, known)
	}
	waitFor(t, "the task running again", func() bool {
		got := srv.alloc(a.ID)
		return got.TaskStates["t"].Restarts >= 1 && got.TaskStates["t"].State == structs.TaskStateRunning
	})
}
