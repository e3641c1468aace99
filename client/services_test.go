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

// TestServicesReregisteredAfterHeartbeatOutage: when the client could
// not heartbeat for longer than its TTL (the servers may have marked the
// node down, which drops its registrations), it sends its allocations'
// registrations again once a heartbeat gets through.
func TestServicesReregisteredAfterHeartbeatOutage(t *testing.T) {
	const ttl = time.Second
	srv := newFakeServer(t, ttl)
	c := startClient(t, testConfig(t, srv.addr()))
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r == 1 })

	a := batchAlloc(c.NodeID(), "sleep 600")
	a.Job.Type = structs.JobTypeService
	a.Job.TaskGroups[0].Services = []*structs.Service{{Name: "web", Provider: structs.ServiceProviderNomad, PortLabel: "8080"}}
	srv.putAlloc(a)
	waitFor(t, "services registered", func() bool { return srv.upserts(a.ID) == 1 })

	srv.set(func(s *fakeServer) { s.leaderless = true })
	outage := time.Now()
	_, beats := srv.counts()
	// The outage must outlast the TTL: that is what may get a node marked down.
	waitFor(t, "an outage longer than the TTL", func() bool { return time.Since(outage) > 2*ttl })
	srv.set(func(s *fakeServer) { s.leaderless = false })
	waitFor(t, "a heartbeat after the outage", func() bool { _, b := srv.counts(); return b > beats })
	waitFor(t, "services registered again", func() bool { return srv.upserts(a.ID) >= 2 })
}
