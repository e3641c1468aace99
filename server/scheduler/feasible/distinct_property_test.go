package feasible

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

// rackNodes: n1, n2 in rack r1; n3 in r2; n4 in r3; bare has no rack.
func rackNodes() []*structs.Node {
	nodes := []*structs.Node{readyNode("n1"), readyNode("n2"), readyNode("n3"), readyNode("n4"), readyNode("bare")}
	for i, rack := range []string{"r1", "r1", "r2", "r3"} {
		nodes[i].Meta["rack"] = rack
	}
	return nodes
}

func rackNode(t *testing.T, nodes []*structs.Node, id string) *structs.Node {
	t.Helper()
	for _, n := range nodes {
		if n.ID == id {
			return n
		}
	}
	t.Fatalf("no node %s", id)
	return nil
}

// nodeOf looks nodes up by ID; nil for an unknown one.
func nodeOf(nodes []*structs.Node) func(string) *structs.Node {
	return func(id string) *structs.Node {
		for _, n := range nodes {
			if n.ID == id {
				return n
			}
		}
		return nil
	}
}

func distinctRack(value string) []*structs.Constraint {
	return []*structs.Constraint{{LTarget: "${meta.rack}", Operand: structs.ConstraintDistinctProperty, RTarget: value}}
}

// twoGroupJob returns job "j" with groups web and db (one task each) and
// the constraints given at each level.
func twoGroupJob(jobCons, webCons, webTaskCons []*structs.Constraint) *structs.Job {
	task := func(cs []*structs.Constraint) []*structs.Task {
		return []*structs.Task{{Name: "t", Driver: "raw_exec", Constraints: cs}}
	}
	job := &structs.Job{
		ID: "j", Type: structs.JobTypeService, Datacenters: []string{"dc1"}, Constraints: jobCons,
		TaskGroups: []*structs.TaskGroup{
			{Name: "web", Count: 3, Constraints: webCons, Tasks: task(webTaskCons)},
			{Name: "db", Count: 3, Tasks: task(nil)},
		},
	}
	job.Canonicalize()
	return job
}

// jobAlloc returns a running allocation of job "j" (or jobID when given).
func jobAlloc(id, group, node string, jobID ...string) *structs.Allocation {
	a := &structs.Allocation{
		ID: id, Namespace: structs.DefaultNamespace, JobID: "j", TaskGroup: group, NodeID: node,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
	}
	if len(jobID) > 0 {
		a.JobID = jobID[0]
	}
	return a
}

func finished(a *structs.Allocation) *structs.Allocation {
	a.ClientStatus = structs.AllocClientStatusComplete
	return a
}

func TestDistinctPropertyFilter(t *testing.T) {
	tests := []struct {
		name                      string
		jobCons, webCons, taskCon []*structs.Constraint
		live                      []*structs.Allocation
		group                     string   // the filter's group; "web" when empty
		placed                    []string // nodes reported with Placed before the check
		otherPlaced               []string // nodes the db group's filter reports
		node                      string
		want                      string // "" = passes
	}{
		{name: "empty rack", webCons: distinctRack(""), node: "n1"},
		{
			name: "rack taken by a live alloc", webCons: distinctRack(""),
			live: []*structs.Allocation{jobAlloc("a", "web", "n1")}, node: "n2",
			want: "distinct_property: ${meta.rack}=r1 has 1 of 1",
		},
		{
			name: "other rack free", webCons: distinctRack(""),
			live: []*structs.Allocation{jobAlloc("a", "web", "n1")}, node: "n3",
		},
		{
			name: "value 2 leaves room for a second", webCons: distinctRack("2"),
			live: []*structs.Allocation{jobAlloc("a", "web", "n1")}, node: "n2",
		},
		{
			name: "value 2 full", webCons: distinctRack("2"),
			live: []*structs.Allocation{jobAlloc("a", "web", "n1"), jobAlloc("b", "web", "n2")}, node: "n1",
			want: "distinct_property: ${meta.rack}=r1 has 2 of 2",
		},
		{
			name: "terminal alloc not counted", webCons: distinctRack(""),
			live: []*structs.Allocation{finished(jobAlloc("a", "web", "n1"))}, node: "n2",
		},
		{
			name: "alloc listed twice counted once", webCons: distinctRack("2"),
			live: []*structs.Allocation{jobAlloc("a", "web", "n1"), jobAlloc("a", "web", "n1")}, node: "n2",
		},
		{
			name: "group level ignores other groups", webCons: distinctRack(""),
			live: []*structs.Allocation{jobAlloc("a", "db", "n1")}, node: "n2",
		},
		{
			name: "job level counts every group", jobCons: distinctRack(""),
			live: []*structs.Allocation{jobAlloc("a", "db", "n1")}, node: "n2",
			want: "distinct_property: ${meta.rack}=r1 has 1 of 1",
		},
		{
			name: "task level constrains its group", taskCon: distinctRack(""),
			live: []*structs.Allocation{jobAlloc("a", "web", "n1")}, node: "n2",
			want: "distinct_property: ${meta.rack}=r1 has 1 of 1",
		},
		{
			name: "other job not counted", jobCons: distinctRack(""),
			live: []*structs.Allocation{jobAlloc("a", "web", "n1", "other")}, node: "n2",
		},
		{
			name: "alloc on an unknown node not counted", webCons: distinctRack(""),
			live: []*structs.Allocation{jobAlloc("a", "web", "gone")}, node: "n1",
		},
		{
			name: "node without the attribute", webCons: distinctRack(""), node: "bare",
			want: "distinct_property: ${meta.rack} not set",
		},
		{
			name: "value not a count", webCons: distinctRack("two"), node: "n1",
			want: `distinct_property: ${meta.rack}: value "two" is not a positive count`,
		},
		{
			name: "value zero", webCons: distinctRack("0"), node: "n1",
			want: `distinct_property: ${meta.rack}: value "0" is not a positive count`,
		},
		{
			name: "own placement counted", webCons: distinctRack(""), placed: []string{"n1"}, node: "n2",
			want: "distinct_property: ${meta.rack}=r1 has 1 of 1",
		},
		{
			name: "another group's placement counted job wide", jobCons: distinctRack(""),
			otherPlaced: []string{"n2"}, node: "n1",
			want: "distinct_property: ${meta.rack}=r1 has 1 of 1",
		},
		{
			name: "another group's placement not counted group wide", webCons: distinctRack(""),
			otherPlaced: []string{"n2"}, node: "n1",
		},
		{
			name:    "job and group constraints both apply",
			jobCons: distinctRack("3"),
			webCons: []*structs.Constraint{{LTarget: "${node.unique.id}", Operand: structs.ConstraintDistinctProperty, RTarget: "1"}},
			live:    []*structs.Allocation{jobAlloc("a", "db", "n1"), jobAlloc("b", "web", "n2")},
			node:    "n2",
			want:    "distinct_property: ${node.unique.id}=n2 has 1 of 1",
		},
		{
			name: "first failing constraint named", jobCons: distinctRack(""),
			webCons: []*structs.Constraint{{LTarget: "${node.unique.id}", Operand: structs.ConstraintDistinctProperty}},
			live:    []*structs.Allocation{jobAlloc("a", "db", "n1")}, node: "n1",
			want: "distinct_property: ${meta.rack}=r1 has 1 of 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := rackNodes()
			job := twoGroupJob(tt.jobCons, tt.webCons, tt.taskCon)
			props := NewDistinctProperties(job, tt.live, nodeOf(nodes))
			web := props.Filter(job.TaskGroups[0])
			if web == nil {
				t.Fatal("Filter(web) = nil, want a filter")
			}
			for _, id := range tt.placed {
				web.Placed(rackNode(t, nodes, id))
			}
			if db := props.Filter(job.TaskGroups[1]); db != nil {
				for _, id := range tt.otherPlaced {
					db.Placed(rackNode(t, nodes, id))
				}
			}
			ok, reason := web.FilterCandidate(&Candidate{Node: rackNode(t, nodes, tt.node)})
			if ok != (tt.want == "") || reason != tt.want {
				t.Errorf("FilterCandidate(%s) = %t %q, want reason %q", tt.node, ok, reason, tt.want)
			}
		})
	}
}

func TestDistinctPropertiesFilterNil(t *testing.T) {
	tests := []struct {
		name          string
		job           *structs.Job
		wantWeb, want bool // want: a filter for db
	}{
		{"no constraint", twoGroupJob(nil, nil, nil), false, false},
		{"group constraint on web only", twoGroupJob(nil, distinctRack(""), nil), true, false},
		{"job constraint covers both", twoGroupJob(distinctRack(""), nil, nil), true, true},
		{"distinct_hosts is not distinct_property", twoGroupJob([]*structs.Constraint{{Operand: structs.ConstraintDistinctHosts}}, nil, nil), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := NewDistinctProperties(tt.job, nil, nodeOf(rackNodes()))
			if got := props.Filter(tt.job.TaskGroups[0]) != nil; got != tt.wantWeb {
				t.Errorf("Filter(web) != nil: got %t, want %t", got, tt.wantWeb)
			}
			if got := props.Filter(tt.job.TaskGroups[1]) != nil; got != tt.want {
				t.Errorf("Filter(db) != nil: got %t, want %t", got, tt.want)
			}
		})
	}
	if f := NewDistinctProperties(nil, nil, nil).Filter(&structs.TaskGroup{Name: "web"}); f != nil {
		t.Errorf("Filter of a nil job = %v, want nil", f)
	}
	var none *DistinctPropertyFilter
	none.Placed(readyNode("n1"))
	if ok, reason := none.FilterCandidate(&Candidate{Node: readyNode("n1")}); !ok || reason != "" {
		t.Errorf("nil filter: got %t %q, want the node admitted", ok, reason)
	}
}

// TestDistinctPropertySpreadsAGroup places a group one allocation at a
// time on the first node the filter admits, as a stack would, and checks
// that no rack ever holds more than the constraint's value and that the
// placement after the last free slot is refused with per-rack reasons.
func TestDistinctPropertySpreadsAGroup(t *testing.T) {
	nodes := rackNodes()[:4] // r1: n1 n2, r2: n3, r3: n4
	job := twoGroupJob(nil, distinctRack("2"), nil)
	f := NewDistinctProperties(job, nil, nodeOf(nodes)).Filter(job.TaskGroups[0])
	perRack := map[string]int{}
	for range 5 {
		placed := false
		for _, n := range nodes {
			if ok, _ := f.FilterCandidate(&Candidate{Node: n}); ok {
				f.Placed(n)
				perRack[n.Meta["rack"]]++
				placed = true
				break
			}
		}
		if !placed {
			t.Fatalf("placement %d refused, racks so far %v", len(perRack), perRack)
		}
	}
	want := map[string]int{"r1": 2, "r2": 2, "r3": 1}
	for rack, n := range want {
		if perRack[rack] != n {
			t.Errorf("rack %s holds %d, want %d (all %v)", rack, perRack[rack], n, perRack)
		}
	}
	f.Placed(nodes[3])
	m := &structs.AllocMetric{}
	for _, n := range nodes {
		ok, reason := f.FilterCandidate(&Candidate{Node: n})
		if ok {
			t.Errorf("node %s admitted with every rack full", n.ID)
		}
		m.FilterNode(reason)
	}
	wantReasons := map[string]int{
		"distinct_property: ${meta.rack}=r1 has 2 of 2": 2,
		"distinct_property: ${meta.rack}=r2 has 2 of 2": 1,
		"distinct_property: ${meta.rack}=r3 has 2 of 2": 1,
	}
	for r, n := range wantReasons {
		if m.ConstraintFiltered[r] != n {
			t.Errorf("ConstraintFiltered[%q] = %d, want %d (all %v)", r, m.ConstraintFiltered[r], n, m.ConstraintFiltered)
		}
	}
}
