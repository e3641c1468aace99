package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestAllocStopReplaces stops a running allocation over RPC: it becomes
// desired stop and an alloc-stop evaluation places a replacement of the
// same name at once (a stop is not a failure, so no reschedule delay).
func TestAllocStopReplaces(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	registerNode(t, c, gpuNode("n1", 2))
	registerJob(t, s, gpuJob("j", structs.JobTypeService, 1, 1))
	waitFor(t, 5*time.Second, func() (bool, string) { return len(liveAllocs(t, s, "j")) == 1, "not placed" })
	old := liveAllocs(t, s, "j")[0]

	var resp structs.AllocStopResponse
	if err := c.Call(structs.RPCAllocStop, &structs.AllocStopRequest{AllocID: old.ID}, &resp); err != nil {
		t.Fatalf("Alloc.Stop: %v", err)
	}
	eval := evalByID(t, s, resp.EvalID)
	if eval == nil || eval.TriggeredBy != structs.EvalTriggerAllocStop || eval.JobID != "j" {
		t.Fatalf("eval: got %+v, want an alloc-stop eval of job j", eval)
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		live := liveAllocs(t, s, "j")
		return len(live) == 1 && live[0].ID != old.ID && live[0].Name == old.Name, "stopped allocation not replaced"
	})
	stopped, err := s.State().AllocByID(nil, old.ID)
	if err != nil || stopped.DesiredStatus != structs.AllocDesiredStatusStop || stopped.DesiredDescription != structs.AllocStopDescription {
		t.Errorf("old allocation: got %+v (err %v), want desired stop %q", stopped, err, structs.AllocStopDescription)
	}
	if stopped != nil && (stopped.Job == nil || stopped.Job.ID != "j") {
		t.Errorf("stopped allocation's job: %v, want the job it ran (a stop carries none on the wire)", stopped.Job)
	}

	// Stopping it again is refused: it is not running any more.
	err = c.Call(structs.RPCAllocStop, &structs.AllocStopRequest{AllocID: old.ID}, &resp)
	if err == nil || !strings.Contains(err.Error(), structs.ErrInvalid.Error()) {
		t.Errorf("second stop: got %v, want %v", err, structs.ErrInvalid)
	}
}

func TestAllocStopErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	tests := []struct {
		name    string
		allocID string
		want    error
	}{
		{"missing ID", "", structs.ErrInvalid},
		{"unknown allocation", structs.GenerateUUID(), structs.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.RPC(structs.RPCAllocStop, &structs.AllocStopRequest{AllocID: tt.allocID}, &structs.AllocStopResponse{})
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}
