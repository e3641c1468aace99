package feasible

import (
	"math"

	"github.com/droverhq/drover/structs"
)

// SpreadRank scores a node by how well one more allocation of the group
// there follows the job's and group's spread blocks, with Nomad's
// semantics:
//
//   - a spread with targets wants each target value to hold its percent of
//     the group's count; values no target names share what the percents
//     leave of 100 (none when they sum to 100: such nodes score -1);
//   - a spread without targets wants the same number of allocations on
//     every value: nodes whose value holds fewer than the others score up
//     to 1, the most loaded values down to -1.
//
// A node without the attribute scores -1 for that spread. Each spread's
// score is in [-1, 1] and the ranker's score is their mean weighted by
// the spreads' weights.
//
// It counts the group's allocations per attribute value: those alive when
// it is built, then one more per Placed call and one less per Removed
// call, so the caller must report every placement (and later stop) it
// makes for the group. Not safe for concurrent use.
type SpreadRank struct {
	spreads     []*spreadCount
	totalWeight float64
}

// spreadCount is one spread block and the group's allocations per value
// of its attribute.
type spreadCount struct {
	attribute string
	weight    float64
	// desired is each target value's wanted number of allocations; empty
	// for an even spread.
	desired map[string]float64
	// others is what the targets leave to the values they do not name
	// (0: such values are not wanted).
	others float64

	used       map[string]int // allocations per value
	usedOthers int            // allocations on values no target names
	lo, hi     int            // least and most allocations of a used value
}

// StageWeight is the ranker's weight among a Stack's stages: its
// heaviest spread's weight, out of 100, of spreadStageWeight, so that a
// spread of weight 100 outweighs the fragmentation stage.
func (r *SpreadRank) StageWeight() float64 {
	heaviest := 0.0
	for _, sc := range r.spreads {
		heaviest = max(heaviest, sc.weight)
	}
	return spreadStageWeight * heaviest / 100
}

// spreadStageWeight is the stage weight of a spread of weight 100.
const spreadStageWeight = 2 * fragWeight

// NewSpreadRank returns the ranker for tg's spreads and job's (a group
// spread replaces a job spread over the same attribute), or nil when
// there are none. live holds the node of each of the group's allocations
// that stays (non-terminal in state and not stopped by the plan), once
// per allocation; nil entries are skipped.
func NewSpreadRank(job *structs.Job, tg *structs.TaskGroup, live []*structs.Node) *SpreadRank {
	spreads := mergeSpreads(job.Spreads, tg.Spreads)
	if len(spreads) == 0 {
		return nil
	}
	r := &SpreadRank{}
	for _, s := range spreads {
		sc := newSpreadCount(s, tg.Count)
		r.spreads = append(r.spreads, sc)
		r.totalWeight += sc.weight
	}
	for _, n := range live {
		r.Placed(n)
	}
	return r
}

// mergeSpreads returns the group's spreads, then the job's over other
// attributes.
func mergeSpreads(jobSpreads, groupSpreads []*structs.Spread) []*structs.Spread {
	out := make([]*structs.Spread, 0, len(jobSpreads)+len(groupSpreads))
	own := map[string]bool{}
	for _, s := range groupSpreads {
		if s != nil {
			out = append(out, s)
			own[s.Attribute] = true
		}
	}
	for _, s := range jobSpreads {
		if s != nil && !own[s.Attribute] {
			out = append(out, s)
		}
	}
	return out
}

func newSpreadCount(s *structs.Spread, count int) *spreadCount {
	sc := &spreadCount{
		attribute: s.Attribute,
		weight:    math.Max(1, float64(s.Weight)),
		desired:   map[string]float64{},
		used:      map[string]int{},
	}
	sum := 0.0
	for _, t := range s.SpreadTarget {
		if t == nil {
			continue
		}
		want := float64(t.Percent) / 100 * float64(count)
		sc.desired[t.Value] = want
		sum += want
	}
	if len(sc.desired) > 0 {
		sc.others = math.Max(0, float64(count)-sum)
	}
	return sc
}

// Name implements Ranker.
func (*SpreadRank) Name() string { return "allocation-spread" }

// Placed counts one more allocation of the group on n.
func (r *SpreadRank) Placed(n *structs.Node) {
	if n == nil {
		return
	}
	resolve := NodeResolver(n)
	for _, sc := range r.spreads {
		if v, ok := resolve(sc.attribute); ok {
			sc.add(v)
		}
	}
}

// Removed uncounts one allocation of the group on n, for a stop the
// plan adds after the ranker was built (a rolling update).
func (r *SpreadRank) Removed(n *structs.Node) {
	if n == nil {
		return
	}
	resolve := NodeResolver(n)
	for _, sc := range r.spreads {
		if v, ok := resolve(sc.attribute); ok {
			sc.remove(v)
		}
	}
}

// Score implements Ranker.
func (r *SpreadRank) Score(c *Candidate) float64 {
	resolve := NodeResolver(c.Node)
	sum := 0.0
	for _, sc := range r.spreads {
		v, ok := resolve(sc.attribute)
		if !ok {
			sum -= sc.weight
			continue
		}
		sum += sc.weight * sc.boost(v)
	}
	return sum / r.totalWeight
}

func (sc *spreadCount) add(value string) {
	sc.used[value]++
	if _, target := sc.desired[value]; !target {
		sc.usedOthers++
	}
	sc.bounds()
}

// remove uncounts one allocation on value; a value never counted is left
// alone.
func (sc *spreadCount) remove(value string) {
	n, ok := sc.used[value]
	if !ok {
		return
	}
	if n <= 1 {
		delete(sc.used, value)
	} else {
		sc.used[value] = n - 1
	}
	if _, target := sc.desired[value]; !target {
		sc.usedOthers--
	}
	sc.bounds()
}

// bounds recomputes the least and most allocations of a used value.
func (sc *spreadCount) bounds() {
	sc.lo, sc.hi = math.MaxInt, 0
	for _, n := range sc.used {
		sc.lo, sc.hi = min(sc.lo, n), max(sc.hi, n)
	}
}

// boost is the spread's score, in [-1, 1], for one more allocation on a
// node whose attribute is value.
func (sc *spreadCount) boost(value string) float64 {
	if len(sc.desired) == 0 {
		return sc.evenBoost(value)
	}
	want, target := sc.desired[value]
	used := sc.used[value]
	if !target {
		want, used = sc.others, sc.usedOthers
	}
	if want <= 0 {
		return -1
	}
	// How far below its wanted count the value stays after this
	// placement, relative to that count.
	return clampUnit((want - float64(used+1)) / want)
}

// evenBoost follows Nomad's even spread: 0 until something is placed, 1
// for a value with fewer allocations than any used one, less the more it
// has above the least loaded value, -1 when all used values are level.
func (sc *spreadCount) evenBoost(value string) float64 {
	if len(sc.used) == 0 {
		return 0
	}
	cur := sc.used[value]
	switch {
	case cur < sc.lo:
		return 1
	case cur > sc.lo:
		return clampUnit(float64(sc.lo-cur) / float64(sc.lo))
	case sc.lo == sc.hi:
		return -1
	}
	return clampUnit(float64(sc.hi-sc.lo) / float64(sc.lo))
}

// clampUnit bounds x to [-1, 1].
func clampUnit(x float64) float64 { return math.Max(-1, math.Min(1, x)) }
