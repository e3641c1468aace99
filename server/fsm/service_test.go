package fsm

import (
	"bytes"
	"io"
	"reflect"
	"testing"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

func testRegistration(id, name, allocID string) *structs.ServiceRegistration {
	return &structs.ServiceRegistration{ID: id, ServiceName: name, Namespace: structs.DefaultNamespace, NodeID: "n1",
		Datacenter: "dc1", JobID: "j", AllocID: allocID, Tags: []string{"v1"}, Address: "10.0.0.1", Port: 8080}
}

func registrations(t *testing.T, f *FSM) []*structs.ServiceRegistration {
	t.Helper()
	regs, err := f.State().ServiceRegistrations(nil, "*")
	if err != nil {
		t.Fatal(err)
	}
	return regs
}

// TestServiceRegistrationApply covers the three message types and the
// removal of an allocation's registrations in the write that ends it.
func TestServiceRegistrationApply(t *testing.T) {
	f, _ := newTestFSM(t)
	populate(t, f) // a1 running on n1
	apply(t, f, 10, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{Services: []*structs.ServiceRegistration{
		testRegistration("r1", "web", "a1"), testRegistration("r2", "admin", "a1"),
		testRegistration("r3", "web", "gone"), // no such allocation: skipped
	}})
	if got := registrations(t, f); len(got) != 2 || got[0].ID != "r2" || got[0].CreateIndex != 10 {
		t.Fatalf("after upsert: %+v", got)
	}
	byName, err := f.State().ServiceRegistrationsByName(nil, structs.DefaultNamespace, "web")
	if err != nil || len(byName) != 1 || byName[0].ID != "r1" {
		t.Fatalf("by name web: %+v, %v", byName, err)
	}
	apply(t, f, 11, structs.ServiceRegistrationDeleteByIDRequestType, &structs.ServiceRegistrationDeleteByIDRequest{ID: "r2",
		WriteRequest: structs.WriteRequest{Namespace: structs.DefaultNamespace}})
	if got := registrations(t, f); len(got) != 1 || got[0].ID != "r1" {
		t.Fatalf("after delete by ID: %+v", got)
	}
	// The allocation completes: its registration goes in the same entry.
	apply(t, f, 12, structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{{
		ID: "a1", ClientStatus: structs.AllocClientStatusComplete}}})
	if got := registrations(t, f); len(got) != 0 {
		t.Fatalf("after the alloc completed: %+v", got)
	}
	if idx, _ := f.State().Index(state.TableServiceRegistrations); idx != 12 {
		t.Errorf("table index %d, want 12", idx)
	}
	// A late registration of the finished allocation is not stored.
	apply(t, f, 13, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{Services: []*structs.ServiceRegistration{
		testRegistration("r1", "web", "a1")}})
	if got := registrations(t, f); len(got) != 0 {
		t.Fatalf("late registration stored: %+v", got)
	}
}

// TestServiceRegistrationNodeDown checks that a node going down takes
// its registrations with it, and that delete by alloc works.
func TestServiceRegistrationNodeDown(t *testing.T) {
	f, _ := newTestFSM(t)
	populate(t, f)
	apply(t, f, 10, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{Services: []*structs.ServiceRegistration{
		testRegistration("r1", "web", "a1")}})
	apply(t, f, 11, structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: "n1", Status: structs.NodeStatusDown, UpdatedAt: 9})
	if got := registrations(t, f); len(got) != 0 {
		t.Fatalf("after node down: %+v", got)
	}
	apply(t, f, 12, structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: "n1", Status: structs.NodeStatusReady, UpdatedAt: 10})
	apply(t, f, 13, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{Services: []*structs.ServiceRegistration{
		testRegistration("r1", "web", "a1")}})
	apply(t, f, 14, structs.ServiceRegistrationDeleteByAllocRequestType, &structs.ServiceRegistrationDeleteByAllocRequest{AllocIDs: []string{"a1"}})
	if got := registrations(t, f); len(got) != 0 {
		t.Fatalf("after delete by alloc: %+v", got)
	}
}

// TestServiceRegistrationSnapshot round-trips the registry through a
// snapshot.
func TestServiceRegistrationSnapshot(t *testing.T) {
	src, _ := newTestFSM(t)
	populate(t, src)
	apply(t, src, 10, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{Services: []*structs.ServiceRegistration{
		testRegistration("r1", "web", "a1"), testRegistration("r2", "admin", "a1")}})
	want := registrations(t, src)
	sink := persist(t, src)
	dst, _ := newTestFSM(t)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got := registrations(t, dst); !reflect.DeepEqual(got, want) {
		t.Errorf("restored %+v, want %+v", got, want)
	}
	if idx, _ := dst.State().Index(state.TableServiceRegistrations); idx != 10 {
		t.Errorf("restored table index %d, want 10", idx)
	}
}

// TestServiceRegistrationEvents checks the Service topic events.
func TestServiceRegistrationEvents(t *testing.T) {
	f, _ := newTestFSM(t)
	populate(t, f)
	f.State().TrackChanges()
	f.State().TakeChanges()
	if err := f.State().UpsertServiceRegistrations(10, []*structs.ServiceRegistration{testRegistration("r1", "web", "a1")}); err != nil {
		t.Fatal(err)
	}
	if err := f.State().DeleteServiceRegistration(11, structs.DefaultNamespace, "r1"); err != nil {
		t.Fatal(err)
	}
	evs := EventsFromChanges(structs.ServiceRegistrationUpsertRequestType, 11, f.State().TakeChanges())
	var types []string
	for _, e := range evs {
		if e.Topic == structs.TopicService && e.Key == "web" {
			types = append(types, e.Type)
		}
	}
	want := []string{structs.TypeServiceRegistration, structs.TypeServiceDeregistration}
	if !reflect.DeepEqual(types, want) {
		t.Errorf("events %v, want %v", types, want)
	}
}
