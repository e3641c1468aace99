package fsm

import (
	"reflect"
	"testing"

	"github.com/droverhq/drover/structs"
)

// oldPlanResults is ApplyPlanResultsRequest as entries already in Raft
// logs were written: every allocation with its own Job, no Job of the
// request.
type oldPlanResults struct {
	Allocs             []*structs.Allocation
	EvalID             string
	PreemptionEvals    []*structs.Evaluation
	EvalUpdate         *structs.Evaluation
	Reservation        *structs.Reservation
	ReleaseReservation bool
	Namespace, JobID   string
	structs.WriteRequest
}

// planFixture registers job j (version 0, then 1) and places one
// allocation of version 0, "old", on n1; it returns both versions.
func planFixture(t *testing.T, f *FSM) (v0, v1 *structs.Job) {
	t.Helper()
	apply(t, f, 1, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("j")})
	v0, _ = f.State().JobByID(nil, "default", "j")
	next := testJob("j")
	next.Meta = map[string]string{"v": "1"}
	apply(t, f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: next})
	v1, _ = f.State().JobByID(nil, "default", "j")
	if v0 == nil || v1 == nil || v0.Version == v1.Version {
		t.Fatalf("job versions: %v, %v", v0 != nil, v1 != nil)
	}
	apply(t, f, 3, structs.ApplyPlanResultsRequestType, &oldPlanResults{Allocs: []*structs.Allocation{testAlloc("old", v0, "n1")}})
	return v0, v1
}

// TestApplyPlanResults_OldEntriesReplay: an entry written before the
// request carried the job once (each allocation with its job) applies
// exactly as the same plan written the new way: stops keep the job they
// ran, placements have the plan's job, whatever the job in state is.
func TestApplyPlanResults_OldEntriesReplay(t *testing.T) {
	fOld, _ := newTestFSM(t)
	fNew, _ := newTestFSM(t)
	v0, v1 := planFixture(t, fOld)
	planFixture(t, fNew)
	// The job in state moves on; the plan was for v1.
	later := testJob("j")
	later.Meta = map[string]string{"v": "2"}
	apply(t, fOld, 4, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: later})
	apply(t, fNew, 4, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: later.Copy()})

	stop := testAlloc("old", v0, "n1")
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	placed := testAlloc("new", v1, "n1")
	apply(t, fOld, 5, structs.ApplyPlanResultsRequestType, &oldPlanResults{Allocs: []*structs.Allocation{stop, placed}, EvalID: "e2"})

	stopWire, placedWire := stop.Copy(), placed.Copy()
	stopWire.Job, placedWire.Job = nil, nil
	apply(t, fNew, 5, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: v1, AllocsStopped: []*structs.Allocation{stopWire}, AllocsPlaced: []*structs.Allocation{placedWire}, EvalID: "e2"})

	for _, id := range []string{"old", "new"} {
		gotOld, _ := fOld.State().AllocByID(nil, id)
		gotNew, _ := fNew.State().AllocByID(nil, id)
		if gotOld == nil || gotNew == nil {
			t.Fatalf("alloc %s: old entry stored %v, new entry stored %v", id, gotOld != nil, gotNew != nil)
		}
		if !reflect.DeepEqual(gotOld, gotNew) {
			t.Errorf("alloc %s: old entry gives job version %d desired %s, new gives %d desired %s",
				id, gotOld.Job.Version, gotOld.DesiredStatus, gotNew.Job.Version, gotNew.DesiredStatus)
		}
	}
	gotOld, _ := fOld.State().AllocByID(nil, "old")
	gotNew, _ := fOld.State().AllocByID(nil, "new")
	if gotOld.Job.Version != v0.Version || gotNew.Job.Version != v1.Version {
		t.Errorf("jobs: stopped has version %d (want %d), placed has %d (want %d)",
			gotOld.Job.Version, v0.Version, gotNew.Job.Version, v1.Version)
	}
}

// TestApplyPlanResults_EveryAllocHasAJob: whatever a plan result holds,
// no allocation in state is left without a job (the scheduler, the
// client and the API read it): a placement with no job anywhere is
// refused and a stop of an allocation gone from state is dropped.
func TestApplyPlanResults_EveryAllocHasAJob(t *testing.T) {
	f, _ := newTestFSM(t)
	v0, v1 := planFixture(t, f)

	orphan := testAlloc("orphan", v1, "n1")
	orphan.JobID, orphan.Job = "gone", nil
	placed := testAlloc("placed", v1, "n1")
	placed.Job = nil
	tests := []struct {
		name string
		req  *structs.ApplyPlanResultsRequest
	}{
		{"no job in the entry or in state", &structs.ApplyPlanResultsRequest{AllocsPlaced: []*structs.Allocation{orphan}}},
		{"the entry's job is another job", &structs.ApplyPlanResultsRequest{Job: v1, AllocsPlaced: []*structs.Allocation{placed, orphan}}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if resp := f.Apply(logEntry(t, uint64(4+i), structs.ApplyPlanResultsRequestType, tt.req)); resp == nil {
				t.Error("applied, want an error")
			}
			if got, _ := f.State().AllocByID(nil, "placed"); got != nil {
				t.Error("alloc placed stored, want the entry refused whole")
			}
		})
	}
	apply(t, f, 6, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: v1, AllocsPlaced: []*structs.Allocation{placed}})

	ghost := testAlloc("ghost", v0, "n1")
	ghost.Job, ghost.DesiredStatus = nil, structs.AllocDesiredStatusStop
	inPlace := testAlloc("old", v0, "n1")
	inPlace.Job = nil
	apply(t, f, 7, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: v1, AllocsStopped: []*structs.Allocation{ghost}, AllocsPlaced: []*structs.Allocation{inPlace}})
	if got, _ := f.State().AllocByID(nil, "ghost"); got != nil {
		t.Errorf("stop of an allocation not in state: stored %s, want dropped", got.ID)
	}

	allocs, err := f.State().Allocs(nil, "*")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"old": v1.Version, "placed": v1.Version}
	if len(allocs) != len(want) {
		t.Errorf("allocs: got %d, want %d", len(allocs), len(want))
	}
	for _, a := range allocs {
		if a.Job == nil {
			t.Fatalf("alloc %s has no job", a.ID)
		}
		if a.Job.Version != want[a.ID] {
			t.Errorf("alloc %s: job version %d, want %d", a.ID, a.Job.Version, want[a.ID])
		}
	}
}

// TestNodeDownLosingIsItsOwnType: a node-down entry of the old type
// replays as it did when it was written (stopped allocations keep their
// client status); only NodeUpdateStatusLosingRequestType marks them lost.
// An older server meets that type as unknown and stops, rather than
// applying it without the marks.
func TestNodeDownLosingIsItsOwnType(t *testing.T) {
	for _, tt := range []struct {
		typ  structs.MessageType
		want string
	}{
		{structs.NodeUpdateStatusRequestType, structs.AllocClientStatusPending},
		{structs.NodeUpdateStatusLosingRequestType, structs.AllocClientStatusLost},
	} {
		f, _ := newTestFSM(t)
		job := testJob("j")
		apply(t, f, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("n1")})
		apply(t, f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
		stopped := testAlloc("a1", job, "n1")
		stopped.DesiredStatus = structs.AllocDesiredStatusStop
		stopped.ClientStatus = structs.AllocClientStatusPending
		apply(t, f, 3, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Allocs: []*structs.Allocation{stopped}})
		apply(t, f, 4, tt.typ, &structs.NodeUpdateStatusRequest{NodeID: "n1", Status: structs.NodeStatusDown, UpdatedAt: 20})
		a, err := f.State().AllocByID(nil, "a1")
		if err != nil || a == nil {
			t.Fatalf("type %d: alloc %v, %v", tt.typ, a, err)
		}
		if a.ClientStatus != tt.want {
			t.Errorf("type %d: stopped alloc on the downed node is %q, want %q", tt.typ, a.ClientStatus, tt.want)
		}
	}
}

// TestDeepEntryFromAnOlderStoreReplays: a job whose task config nests
// deeper than RPC decoding allows (structs.MsgpackMaxDepth), as an
// earlier version could commit, still applies from the log, so a server
// with such an entry starts.
func TestDeepEntryFromAnOlderStoreReplays(t *testing.T) {
	f, _ := newTestFSM(t)
	job := testJob("deep")
	var cfg any = "leaf"
	for range structs.MsgpackMaxDepth + 50 {
		cfg = map[string]any{"k": cfg}
	}
	job.TaskGroups[0].Tasks[0].Config["nested"] = cfg
	buf, err := structs.Encode(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	if err := structs.Decode(buf[1:], &structs.JobRegisterRequest{}); err == nil {
		t.Fatal("RPC decoding took the deep entry: nothing to prove")
	}
	apply(t, f, 1, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
	if got, err := f.State().JobByID(nil, structs.DefaultNamespace, "deep"); err != nil || got == nil {
		t.Fatalf("deep job after apply: %v, %v", got, err)
	}
}
