package scheduler_test

import (
	"testing"

	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

func TestReplacementAvoidsTheNodeItFailedOn(t *testing.T) {
	// A filler makes the nodes differ, so "train" scores one above the
	// other; when it fails there, its replacement goes to the other node
	// (the state is as it was, so without the penalty it would score the
	// same node first again).
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	h.UpsertNode(schedtest.Node("gpu-2", 4, "", 80))
	process(t, h, h.RegisterJob(schedtest.GPUJob("filler", 1, 2)))

	job := schedtest.GPUJob("train", 1, 1)
	process(t, h, h.RegisterJob(job))
	first := onlyAlloc(t, h, "train")
	if s := first.Metrics.ScoreMetaData; len(s) != 2 || s[0].NormScore == s[1].NormScore {
		t.Fatalf("setup: scores %+v, want two nodes scored apart", s)
	}
	h.SetClientStatus(first.ID, structs.AllocClientStatusFailed)
	h.Advance(scheduler.DefaultReschedulePolicy(structs.JobTypeBatch).Delay)
	process(t, h, h.NewEval(h.Job(ns, "train"), structs.EvalTriggerRetryFailed))

	next := onlyAlloc(t, h, "train")
	if next.NodeID == first.NodeID {
		t.Errorf("replacement placed on %s, the node its predecessor failed on", next.NodeName)
	}
	if s, ok := next.Metrics.ScoreMetaData[0].Scores["node-reschedule-penalty"]; !ok || s != 0 {
		t.Errorf("chosen node's penalty score = %v (%t), want 0", s, ok)
	}
}
