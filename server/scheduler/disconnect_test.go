package scheduler_test

import (
	"testing"
	"time"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// disconnectJob is a one-allocation service job whose group waits out a
// node's disconnect for an hour.
func disconnectJob(replace bool) *structs.Job {
	job := schedtest.ServiceJob("dc", 1)
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: time.Hour, Replace: &replace}
	job.Canonicalize()
	return job
}

// TestDisconnectUnknownThenReplacedThenKept: the node of an allocation
// whose group has lost_after goes down: the allocation turns unknown
// (not lost, not stopped), a replacement is placed elsewhere, and a
// follow-up evaluation is due when the window ends. The node returns in
// time: the replacement is stopped and the original kept.
func TestDisconnectUnknownThenReplacedThenKept(t *testing.T) {
	h := schedtest.NewHarness(t)
	a, b := schedtest.Node("a", 0, "", 0), schedtest.Node("b", 0, "", 0)
	h.UpsertNode(a)
	job := disconnectJob(true)
	process(t, h, h.RegisterJob(job))
	orig := onlyAlloc(t, h, "dc")
	h.UpsertNode(b)

	h.SetNodeStatus(a.ID, structs.NodeStatusDown)
	process(t, h, h.NewEval(h.Job(ns, "dc"), structs.EvalTriggerNodeUpdate))

	live := h.LiveAllocs(ns, "dc")
	if len(live) != 2 {
		t.Fatalf("live allocations: got %d, want the unknown original and a replacement", len(live))
	}
	for _, al := range live {
		switch al.ID {
		case orig.ID:
			if al.ClientStatus != structs.AllocClientStatusUnknown || al.DesiredStatus != structs.AllocDesiredStatusRun {
				t.Errorf("original: %s/%s, want unknown and still meant to run", al.ClientStatus, al.DesiredStatus)
			}
		default:
			if al.NodeID != b.ID || al.Name != orig.Name {
				t.Errorf("replacement %s on %s, want %s on b", al.Name, al.NodeID, orig.Name)
			}
		}
	}
	lastFollowUp(t, h, time.Hour)
	if sum, err := h.State.JobSummary(nil, ns, "dc"); err != nil || sum.Summary[schedtest.ServiceTask].Unknown != 1 {
		t.Errorf("job summary: %+v (%v), want one unknown allocation", sum, err)
	}

	h.SetNodeStatus(a.ID, structs.NodeStatusReady)
	h.SetClientStatus(orig.ID, structs.AllocClientStatusRunning)
	process(t, h, h.NewEval(h.Job(ns, "dc"), structs.EvalTriggerNodeUpdate))
	if got := onlyAlloc(t, h, "dc"); got.ID != orig.ID {
		t.Errorf("kept %s, want the original %s", got.ID, orig.ID)
	}
}

// TestDisconnectWindowEndsLost: past lost_after, the unknown allocation
// is lost; with replace = false nothing was placed meanwhile, and the
// replacement comes only then.
func TestDisconnectWindowEndsLost(t *testing.T) {
	h := schedtest.NewHarness(t)
	a, b := schedtest.Node("a", 0, "", 0), schedtest.Node("b", 0, "", 0)
	h.UpsertNode(a)
	process(t, h, h.RegisterJob(disconnectJob(false)))
	orig := onlyAlloc(t, h, "dc")
	h.UpsertNode(b)

	h.SetNodeStatus(a.ID, structs.NodeStatusDown)
	process(t, h, h.NewEval(h.Job(ns, "dc"), structs.EvalTriggerNodeUpdate))
	if got := onlyAlloc(t, h, "dc"); got.ID != orig.ID || got.ClientStatus != structs.AllocClientStatusUnknown {
		t.Fatalf("with replace = false: live %s (%s), want only the unknown original", got.ID, got.ClientStatus)
	}
	lastFollowUp(t, h, time.Hour)

	h.Advance(time.Hour)
	process(t, h, h.NewEval(h.Job(ns, "dc"), structs.EvalTriggerRetryFailed))
	got := onlyAlloc(t, h, "dc")
	if got.ID == orig.ID || got.NodeID != b.ID {
		t.Errorf("after the window: live %s on %s, want a replacement on b", got.ID, got.NodeID)
	}
	for _, al := range h.Allocs(ns, "dc") {
		if al.ID == orig.ID && al.ClientStatus != structs.AllocClientStatusLost {
			t.Errorf("original after the window: %s, want lost", al.ClientStatus)
		}
	}
}
