package scheduler_test

import (
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// portJob is a service job of count allocations whose group asks for
// the static and dynamic ports given (labels s0.., d0..).
func portJob(id string, count int, static []int, dynamic int) *structs.Job {
	job := schedtest.ServiceJob(id, count)
	n := &structs.NetworkResource{Mode: structs.NetworkModeHost}
	for i, p := range static {
		n.ReservedPorts = append(n.ReservedPorts, structs.Port{Label: label("s", i), Value: p})
	}
	for i := range dynamic {
		n.DynamicPorts = append(n.DynamicPorts, structs.Port{Label: label("d", i), To: 8080})
	}
	job.TaskGroups[0].Networks = []*structs.NetworkResource{n}
	return job
}

func label(prefix string, i int) string { return prefix + string(rune('0'+i)) }

// portNode is a CPU node at 10.0.0.1 with the dynamic range lo-hi and
// the reserved ports given.
func portNode(name string, lo, hi int, reserved string) *structs.Node {
	n := schedtest.Node(name, 0, "", 0)
	n.NodeResources.Networks = []*structs.NetworkResource{{Device: "eth0", IP: "10.0.0.1", CIDR: "10.0.0.1/32"}}
	n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort = lo, hi
	if reserved != "" {
		n.ReservedResources = &structs.NodeReservedResources{Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: reserved}}
	}
	return n
}

// heldPorts returns every host port the live allocations of job hold,
// failing on one held twice.
func heldPorts(t *testing.T, h *schedtest.Harness, jobs ...string) map[int]string {
	t.Helper()
	held := map[int]string{}
	for _, job := range jobs {
		for _, a := range h.LiveAllocs(ns, job) {
			for _, p := range a.AllocatedResources.Shared.Ports {
				if other, dup := held[p.Value]; dup {
					t.Fatalf("port %d held by %s and %s", p.Value, other, a.Name)
				}
				held[p.Value] = a.Name
				if p.HostIP != "10.0.0.1" {
					t.Errorf("%s port %s: HostIP %q, want 10.0.0.1", a.Name, p.Label, p.HostIP)
				}
			}
		}
	}
	return held
}

func TestStaticPortConflictMovesToAnotherNode(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(portNode("a", 20000, 20010, ""))
	process(t, h, h.RegisterJob(portJob("first", 1, []int{8080}, 0)))
	first := onlyAlloc(t, h, "first")

	h.UpsertNode(portNode("b", 20000, 20010, ""))
	process(t, h, h.RegisterJob(portJob("second", 1, []int{8080}, 0)))
	second := onlyAlloc(t, h, "second")
	if second.NodeID == first.NodeID {
		t.Fatalf("second alloc placed on %s beside the first, which holds port 8080", second.NodeID)
	}
	if p, ok := second.AllocatedResources.Shared.Port("s0"); !ok || p.Value != 8080 {
		t.Errorf("second's port s0: got %+v, want 8080", p)
	}

	// A third has nowhere to go: the reason says which port.
	process(t, h, h.RegisterJob(portJob("third", 1, []int{8080}, 0)))
	m := lastUpdate(t, h).FailedTGAllocs[schedtest.ServiceTask]
	if m == nil || m.DimensionExhausted["port 8080 in use"] != 2 {
		t.Fatalf("third: failed metric %+v, want port 8080 in use on 2 nodes", m)
	}
}

func TestStaticPortReservedByNode(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(portNode("a", 20000, 20010, "22,8000-8100"))
	process(t, h, h.RegisterJob(portJob("web", 1, []int{8080}, 0)))
	if live := h.LiveAllocs(ns, "web"); len(live) != 0 {
		t.Fatalf("placed %d allocs on a port the node reserves", len(live))
	}
	m := lastUpdate(t, h).FailedTGAllocs[schedtest.ServiceTask]
	if m == nil || m.DimensionExhausted["port 8080 in use"] != 1 {
		t.Fatalf("failed metric %+v, want port 8080 in use", m)
	}
}

func TestDynamicPortsUniqueOnNode(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(portNode("a", 20000, 20011, "20005"))
	// Two jobs, three allocations each, two dynamic ports each: 12 ports
	// from a range of 12 less one reserved: the last allocation cannot
	// fit, the others hold distinct ports within the range.
	process(t, h, h.RegisterJob(portJob("one", 3, nil, 2)))
	process(t, h, h.RegisterJob(portJob("two", 3, nil, 2)))
	held := heldPorts(t, h, "one", "two")
	if len(held) != 10 {
		t.Fatalf("ports held: got %d (%v), want 10", len(held), held)
	}
	for p := range held {
		if p < 20000 || p > 20011 || p == 20005 {
			t.Errorf("port %d outside the range or reserved", p)
		}
	}
	for _, a := range h.LiveAllocs(ns, "one") {
		if p, _ := a.AllocatedResources.Shared.Port("d0"); p.To != 8080 {
			t.Errorf("%s d0: To %d, want 8080", a.Name, p.To)
		}
	}
	m := lastUpdate(t, h).FailedTGAllocs[schedtest.ServiceTask]
	if m == nil || m.DimensionExhausted["dynamic ports: none free in 20000-20011"] != 1 {
		t.Fatalf("failed metric %+v, want dynamic ports exhausted", m)
	}
}

// TestPortsKeptInPlace: a change that keeps the group's spec keeps each
// allocation's ports; a change to the network replaces the allocations,
// which may take the same ports back (the old ones stop in the plan).
func TestPortsKeptInPlace(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(portNode("a", 20000, 20100, ""))
	job := portJob("web", 2, []int{9000}, 1)
	job.TaskGroups[0].Count = 1
	process(t, h, h.RegisterJob(job))
	before := onlyAlloc(t, h, "web")

	scaled := job.Copy()
	scaled.TaskGroups[0].Count = 1
	scaled.Meta = map[string]string{"v": "2"}
	process(t, h, h.RegisterJob(scaled))
	after := onlyAlloc(t, h, "web")
	if after.ID != before.ID {
		t.Fatalf("alloc replaced (%s -> %s), want updated in place", before.ID, after.ID)
	}
	if got, want := after.AllocatedResources.Shared.Ports, before.AllocatedResources.Shared.Ports; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ports after in-place update: got %+v, want %+v", got, want)
	}

	moved := scaled.Copy()
	moved.TaskGroups[0].Networks[0].ReservedPorts[0].To = 90
	process(t, h, h.RegisterJob(moved))
	replaced := onlyAlloc(t, h, "web")
	if replaced.ID == before.ID {
		t.Fatalf("alloc kept after its network changed, want replaced")
	}
	if p, _ := replaced.AllocatedResources.Shared.Port("s0"); p.Value != 9000 || p.To != 90 {
		t.Errorf("replacement's s0: got %+v, want 9000 -> 90", p)
	}
}
