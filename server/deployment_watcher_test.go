package server

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestWatcherProgressDeadlineReverts runs the leader's watcher on a
// real server with a clock the test moves: the first version's
// deployment succeeds once its allocation is healthy (the version
// becomes stable); the next version's replacement never becomes
// healthy, so past progress_deadline the deployment fails and
// auto_revert registers version 0 again as version 2.
func TestWatcherProgressDeadlineReverts(t *testing.T) {
	t.Parallel()
	var skew atomic.Int64
	cfg := testConfig(t)
	cfg.clock = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	s := startServer(t, cfg)
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("n1", 0)
	registerNode(t, c, node)
	job := gpuJob("web", structs.JobTypeService, 1, 0)
	job.TaskGroups[0].Tasks[0].Resources.Devices = nil
	job.TaskGroups[0].Update = &structs.UpdateStrategy{MaxParallel: 1, AutoRevert: true, HealthCheck: structs.UpdateHealthCheckTaskStates,
		Stagger: time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 2 * time.Minute}
	waitEvalComplete(t, s, registerJob(t, s, job).EvalID)
	reportHealthy(t, c, node, liveAllocs(t, s, "web"))
	waitFor(t, 10*time.Second, func() (bool, string) {
		return storedJob(t, s, "web").Stable, "version 0 not stable"
	})

	changed := job.Copy()
	changed.TaskGroups[0].Tasks[0].Env = map[string]string{"VERSION": "2"}
	waitEvalComplete(t, s, registerJob(t, s, changed).EvalID)
	reportRunning(t, c, node, liveAllocs(t, s, "web"))
	if err := s.stepDeployments(cfg.clock()); err != nil { // a step before the deadline changes nothing
		t.Fatal(err)
	}
	if d := latestDeployment(t, s, "web"); d.JobVersion != 1 || d.Status != structs.DeploymentStatusRunning {
		t.Fatalf("before the deadline: deployment of version %d %s, want version 1 running", d.JobVersion, d.Status)
	}

	skew.Store(int64(3 * time.Minute))
	waitFor(t, 10*time.Second, func() (bool, string) {
		j := storedJob(t, s, "web")
		return j.Version == 2, "job not reverted"
	})
	all, err := s.State().DeploymentsByJob(nil, structs.DefaultNamespace, "web")
	if err != nil {
		t.Fatal(err)
	}
	var failed *structs.Deployment
	for _, d := range all {
		if d.JobVersion == 1 {
			failed = d
		}
	}
	if failed == nil || failed.Status != structs.DeploymentStatusFailed ||
		!strings.HasPrefix(failed.StatusDescription, structs.DeploymentDescProgressDeadline+" - rolling back to job version 0") {
		t.Errorf("version 1's deployment = %+v, want failed at the progress deadline, rolled back", failed)
	}
	if j := storedJob(t, s, "web"); j.TaskGroups[0].Tasks[0].Env["VERSION"] != "" {
		t.Errorf("version 2 env %v, want version 0's spec", j.TaskGroups[0].Tasks[0].Env)
	}
}
