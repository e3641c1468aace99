package feasible

import (
	"fmt"
	"math"
	"testing"

	"github.com/droverhq/drover/structs"
)

// spreadNode is a node in datacenter dc whose meta.rack is rack ("" for
// none).
func spreadNode(id, dc, rack string) *structs.Node {
	n := &structs.Node{ID: id, Name: id, Datacenter: dc, Meta: map[string]string{}}
	if rack != "" {
		n.Meta["rack"] = rack
	}
	return n
}

func spreadJob(count int, job, group []*structs.Spread) (*structs.Job, *structs.TaskGroup) {
	tg := &structs.TaskGroup{Name: "g", Count: count, Spreads: group}
	return &structs.Job{ID: "j", Spreads: job, TaskGroups: []*structs.TaskGroup{tg}}, tg
}

func dcSpread(weight int8, targets ...*structs.SpreadTarget) *structs.Spread {
	return &structs.Spread{Attribute: "${node.datacenter}", Weight: weight, SpreadTarget: targets}
}

func rackSpread(weight int8) *structs.Spread {
	return &structs.Spread{Attribute: "${meta.rack}", Weight: weight}
}

// placeGreedy places n allocations one by one on the best scoring node
// (the first of equals), as the stack does, and counts them per key.
func placeGreedy(r *SpreadRank, nodes []*structs.Node, n int, key func(*structs.Node) string) map[string]int {
	out := map[string]int{}
	for range n {
		var best *structs.Node
		bestScore := math.Inf(-1)
		for _, node := range nodes {
			if s := r.Score(&Candidate{Node: node}); s > bestScore {
				best, bestScore = node, s
			}
		}
		r.Placed(best)
		out[key(best)]++
	}
	return out
}

func byDC(n *structs.Node) string   { return n.Datacenter }
func byRack(n *structs.Node) string { return n.Meta["rack"] }

func TestNewSpreadRankWithoutSpreads(t *testing.T) {
	job, tg := spreadJob(3, nil, nil)
	if r := NewSpreadRank(job, tg, nil); r != nil {
		t.Errorf("got ranker %+v, want nil without spreads", r)
	}
}

// TestSpreadRankPlacements places a group greedily and checks where its
// allocations end up.
func TestSpreadRankPlacements(t *testing.T) {
	threeDCs := []*structs.Node{spreadNode("a", "dc1", ""), spreadNode("b", "dc2", ""), spreadNode("c", "dc3", "")}
	racks := []*structs.Node{spreadNode("a", "dc1", "r1"), spreadNode("b", "dc1", "r2"), spreadNode("c", "dc1", "r3")}
	tests := []struct {
		name   string
		count  int
		job    []*structs.Spread
		group  []*structs.Spread
		nodes  []*structs.Node
		live   []*structs.Node
		key    func(*structs.Node) string
		placed int
		want   map[string]int
	}{
		{
			name:  "targets 70/30",
			count: 10, job: []*structs.Spread{dcSpread(50, &structs.SpreadTarget{Value: "dc1", Percent: 70}, &structs.SpreadTarget{Value: "dc2", Percent: 30})},
			nodes: threeDCs[:2], key: byDC, placed: 10,
			want: map[string]int{"dc1": 7, "dc2": 3},
		},
		{
			name:  "untargeted values share the rest",
			count: 4, job: []*structs.Spread{dcSpread(50, &structs.SpreadTarget{Value: "dc1", Percent: 50})},
			nodes: threeDCs, key: byDC, placed: 4,
			want: map[string]int{"dc1": 2, "dc2": 2},
		},
		{
			name:  "targets count live allocations",
			count: 10, job: []*structs.Spread{dcSpread(50, &structs.SpreadTarget{Value: "dc1", Percent: 70}, &structs.SpreadTarget{Value: "dc2", Percent: 30})},
			nodes: threeDCs[:2], live: []*structs.Node{threeDCs[0], threeDCs[0], threeDCs[0], threeDCs[0], threeDCs[0], threeDCs[0], threeDCs[0]},
			key: byDC, placed: 3,
			want: map[string]int{"dc2": 3},
		},
		{
			name:  "even over racks",
			count: 6, group: []*structs.Spread{rackSpread(50)},
			nodes: racks, key: byRack, placed: 6,
			want: map[string]int{"r1": 2, "r2": 2, "r3": 2},
		},
		{
			name:  "even fills the emptier racks first",
			count: 6, group: []*structs.Spread{rackSpread(50)},
			nodes: racks, live: []*structs.Node{racks[0], racks[0], racks[1]},
			key: byRack, placed: 3,
			want: map[string]int{"r2": 1, "r3": 2},
		},
		{
			name:  "group spread replaces the job's over the same attribute",
			count: 4,
			job:   []*structs.Spread{dcSpread(50, &structs.SpreadTarget{Value: "dc1", Percent: 100})},
			group: []*structs.Spread{dcSpread(50, &structs.SpreadTarget{Value: "dc2", Percent: 100})},
			nodes: threeDCs, key: byDC, placed: 4,
			want: map[string]int{"dc2": 4},
		},
		{
			name:  "nil live nodes are skipped",
			count: 2, group: []*structs.Spread{rackSpread(50)},
			nodes: racks[:2], live: []*structs.Node{nil, racks[0]},
			key: byRack, placed: 1,
			want: map[string]int{"r2": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, tg := spreadJob(tt.count, tt.job, tt.group)
			r := NewSpreadRank(job, tg, tt.live)
			got := placeGreedy(r, tt.nodes, tt.placed, tt.key)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got placements %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSpreadRankScores checks single scores against the formulas.
func TestSpreadRankScores(t *testing.T) {
	dc1, dc2, dc3 := spreadNode("a", "dc1", "r1"), spreadNode("b", "dc2", "r2"), spreadNode("c", "dc3", "")
	targets7030 := []*structs.Spread{dcSpread(50, &structs.SpreadTarget{Value: "dc1", Percent: 70}, &structs.SpreadTarget{Value: "dc2", Percent: 30})}
	tests := []struct {
		name  string
		count int
		job   []*structs.Spread
		live  []*structs.Node
		node  *structs.Node
		want  float64
	}{
		{name: "target, nothing placed", count: 10, job: targets7030, node: dc1, want: 6.0 / 7},
		{name: "target, one placed", count: 10, job: targets7030, live: []*structs.Node{dc2}, node: dc2, want: (3.0 - 2) / 3},
		{name: "target already full", count: 10, job: targets7030, live: []*structs.Node{dc2, dc2, dc2, dc2}, node: dc2, want: -2.0 / 3},
		{name: "far over target is bounded", count: 2, job: targets7030, live: []*structs.Node{dc2, dc2, dc2, dc2, dc2}, node: dc2, want: -1},
		{name: "value with no target when targets take 100", count: 10, job: targets7030, node: dc3, want: -1},
		{name: "node without the attribute", count: 4, job: []*structs.Spread{rackSpread(50)}, node: dc3, want: -1},
		{name: "even, nothing placed", count: 4, job: []*structs.Spread{rackSpread(50)}, node: dc1, want: 0},
		{name: "even, level values", count: 4, job: []*structs.Spread{rackSpread(50)}, live: []*structs.Node{dc1, dc2}, node: dc1, want: -1},
		{name: "even, unused value", count: 4, job: []*structs.Spread{rackSpread(50)}, live: []*structs.Node{dc1}, node: dc2, want: 1},
		{name: "even, least loaded value", count: 9, job: []*structs.Spread{rackSpread(50)}, live: []*structs.Node{dc1, dc1, dc2, dc2, dc2}, node: dc1, want: 0.5},
		{name: "even, most loaded value", count: 9, job: []*structs.Spread{rackSpread(50)}, live: []*structs.Node{dc1, dc1, dc2, dc2, dc2}, node: dc2, want: -0.5},
		{
			// (80 * 6/7 + 20 * 1) / 100: the rack is unused while r2 holds one.
			name: "weighted mean of two spreads", count: 10,
			job:  []*structs.Spread{dcSpread(80, &structs.SpreadTarget{Value: "dc1", Percent: 70}), rackSpread(20)},
			live: []*structs.Node{dc2}, node: dc1, want: (80*6.0/7 + 20) / 100,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, tg := spreadJob(tt.count, tt.job, nil)
			r := NewSpreadRank(job, tg, tt.live)
			if got := r.Score(&Candidate{Node: tt.node}); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("got score %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSpreadRankScoreBounds checks that scores stay in [-1, 1] however
// lopsided the placements are.
func TestSpreadRankScoreBounds(t *testing.T) {
	nodes := []*structs.Node{spreadNode("a", "dc1", "r1"), spreadNode("b", "dc2", "r1"), spreadNode("c", "dc3", "r2"), spreadNode("d", "dc4", "")}
	job, tg := spreadJob(3, []*structs.Spread{
		dcSpread(100, &structs.SpreadTarget{Value: "dc1", Percent: 10}, &structs.SpreadTarget{Value: "dc2", Percent: 5}),
		rackSpread(1),
	}, nil)
	r := NewSpreadRank(job, tg, nil)
	for i := range 50 {
		for _, n := range nodes {
			if got := r.Score(&Candidate{Node: n}); got < -1 || got > 1 || math.IsNaN(got) {
				t.Fatalf("after %d placements, node %s: got score %v, want it in [-1, 1]", i, n.ID, got)
			}
		}
		r.Placed(nodes[i%2])
	}
}

func TestSpreadRankRemoved(t *testing.T) {
	r1, r2 := spreadNode("a", "dc1", "r1"), spreadNode("b", "dc1", "r2")
	job, tg := spreadJob(4, []*structs.Spread{
		dcSpread(50, &structs.SpreadTarget{Value: "dc2", Percent: 50}),
		rackSpread(50),
	}, nil)
	r := NewSpreadRank(job, tg, []*structs.Node{r1, r1, r2})
	before := r.Score(&Candidate{Node: r2})
	r.Removed(r1)
	r.Removed(spreadNode("c", "dc9", "r9")) // never counted: no effect
	r.Removed(nil)
	// Racks r1 and r2 are now level at one each; dc1 (not a target) holds
	// 2 of the 2 allocations its share allows.
	if got, want := r.Score(&Candidate{Node: r2}), (50*-0.5+50*-1.0)/100; math.Abs(got-want) > 1e-9 {
		t.Errorf("got score %v after a removal (before %v), want %v", got, before, want)
	}
	r.Removed(r1)
	r.Removed(r2)
	if got := r.Score(&Candidate{Node: r1}); math.Abs(got-(50*0.5+50*0)/100) > 1e-9 {
		t.Errorf("got score %v with nothing left, want %v", got, 0.25)
	}
}
