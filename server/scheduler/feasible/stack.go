package feasible

import (
	"slices"

	"github.com/droverhq/drover/structs"
)

// maxScoreMeta is how many of the best nodes' scores a metric keeps.
const maxScoreMeta = 5

// Proposed returns the non-terminal allocations that would be on the node
// if the plan built so far were applied: those in state, less the ones the
// plan stops, plus the ones it places.
type Proposed func(nodeID string) ([]*structs.Allocation, error)

// Candidate is a node under consideration for one placement. DeviceFit
// records the instances it chose; rankers read them.
type Candidate struct {
	Node     *structs.Node
	Proposed []*structs.Allocation

	chosen [][]instanceRef // per device ask
	scores []float64       // per ranker
	score  float64
	tie    uint64
}

// Option is the node chosen for one placement and what the allocation
// holds there.
type Option struct {
	Node      *structs.Node
	Resources *structs.AllocatedResources
	Scores    map[string]float64
	Score     float64
}

// Stack chains the filter, fit and rank stages for one task group. It is
// built once per group and evaluation, given the nodes once, then asked
// for one node per placement. Not safe for concurrent use.
type Stack struct {
	ask              *ask
	seed             string
	filters          []Filter
	candidateFilters []CandidateFilter
	fits             []Fit
	rankers          []Ranker

	nodes     []*structs.Node     // nodes that passed the filters
	evaluated int                 // nodes given to SetNodes
	base      structs.AllocMetric // filter verdicts, copied into every metric
}

// NewStack assembles the whole chain for one task group of job. seed
// breaks ties between equally scored nodes (the scheduler passes the eval
// ID: one evaluation is deterministic, while concurrent ones spread out).
func NewStack(job *structs.Job, tg *structs.TaskGroup, seed string) *Stack {
	a := newAsk(job, tg)
	checker := NewChecker()
	devices := newDeviceMatcher(a.devices, checker)
	s := &Stack{ask: a, seed: seed}

	s.filters = []Filter{
		// The node is up, not draining, and eligible.
		ReadyFilter{},
		// The node is in one of the job's datacenters.
		NewDatacenterFilter(job.Datacenters),
		// Every task's driver is detected and healthy.
		NewDriverFilter(a.drivers()),
		// The job's, group's and tasks' attribute constraints hold.
		NewConstraintFilter(a.constraints(), checker),
		// Every device request matches some instance by name and constraints.
		&DeviceConstraintFilter{devices: devices},
	}
	// No other allocation of the job (or group) is on the node.
	if f := NewDistinctHostsFilter(job, tg); f != nil {
		s.candidateFilters = append(s.candidateFilters, f)
	}
	s.fits = []Fit{
		// Enough free healthy instances per device request; chooses them,
		// best-connected first (TopologyPicker).
		&DeviceFit{devices: devices, picker: &TopologyPicker{}},
		// CPU and memory fit next to what is proposed on the node.
		newResourceFit(a),
	}
	s.rankers = []Ranker{
		// Fill nodes, GPUs weighted most, before spreading.
		&BinPackRank{ask: a},
		// Spread the group's own allocations.
		NewJobAntiAffinityRank(job, tg),
	}
	// Keep GPU nodes free for GPU work.
	if a.gpus == 0 {
		s.rankers = append(s.rankers, GPUReserveRank{})
	}
	// The job's, group's and tasks' affinities.
	if r := NewNodeAffinityRank(a.affinities(), checker); r != nil {
		s.rankers = append(s.rankers, r)
	}
	// The device requests' affinities, against the chosen instances.
	if r := newDeviceAffinityRank(a.devices, checker); r != nil {
		s.rankers = append(s.rankers, r)
	}
	return s
}

// SetNodes runs the filters over nodes and keeps those that pass.
func (s *Stack) SetNodes(nodes []*structs.Node) {
	s.nodes = s.nodes[:0]
	s.evaluated = len(nodes)
	s.base = structs.AllocMetric{}
	for _, n := range nodes {
		if n.Ready() {
			if s.base.NodesAvailable == nil {
				s.base.NodesAvailable = map[string]int{}
			}
			s.base.NodesAvailable[n.Datacenter]++
		}
		if ok, reason := s.filter(n); !ok {
			s.base.FilterNode(reason)
			continue
		}
		s.nodes = append(s.nodes, n)
	}
}

func (s *Stack) filter(n *structs.Node) (bool, string) {
	for _, f := range s.filters {
		if ok, reason := f.Filter(n); !ok {
			return false, reason
		}
	}
	return true, ""
}

// Select returns the best node for one more allocation of the group, or
// nil when none fits, with the metric explaining the choice either way.
// An error comes only from proposed.
func (s *Stack) Select(proposed Proposed) (*Option, *structs.AllocMetric, error) {
	m := s.base.Copy()
	m.NodesEvaluated = s.evaluated
	var best *Candidate
	var top []*Candidate
	for _, n := range s.nodes {
		allocs, err := proposed(n.ID)
		if err != nil {
			return nil, m, err
		}
		c := &Candidate{Node: n, Proposed: allocs}
		if !s.admit(c, m) {
			continue
		}
		s.rank(c)
		if best == nil || better(c, best) {
			best = c
		}
		top = keepTop(top, c)
	}
	for _, c := range top {
		m.ScoreMetaData = append(m.ScoreMetaData, &structs.NodeScoreMeta{
			NodeID: c.Node.ID, Scores: s.scoreMap(c), NormScore: c.score,
		})
	}
	if best == nil {
		return nil, m, nil
	}
	return &Option{
		Node:      best.Node,
		Resources: s.ask.resources(s.devices(best)),
		Scores:    s.scoreMap(best),
		Score:     best.score,
	}, m, nil
}

// admit runs the candidate filters and fits, recording a rejection in m.
func (s *Stack) admit(c *Candidate, m *structs.AllocMetric) bool {
	for _, f := range s.candidateFilters {
		if ok, reason := f.FilterCandidate(c); !ok {
			m.FilterNode(reason)
			return false
		}
	}
	for _, f := range s.fits {
		if ok, dim := f.Fit(c); !ok {
			m.ExhaustedNode(dim)
			return false
		}
	}
	return true
}

// rank scores c with every ranker; its score is their mean.
func (s *Stack) rank(c *Candidate) {
	c.scores = make([]float64, len(s.rankers))
	sum := 0.0
	for i, r := range s.rankers {
		c.scores[i] = r.Score(c)
		sum += c.scores[i]
	}
	c.score = sum / float64(len(s.rankers))
	c.tie = fnv64a(fnv64a(fnvOffset, s.seed), c.Node.ID)
}

const fnvOffset, fnvPrime = 14695981039346656037, 1099511628211

// fnv64a continues an FNV-1a hash over str.
func fnv64a(h uint64, str string) uint64 {
	for i := 0; i < len(str); i++ {
		h ^= uint64(str[i])
		h *= fnvPrime
	}
	return h
}

// devices returns the instances chosen on c as allocated, per task.
func (s *Stack) devices(c *Candidate) map[string][]*structs.AllocatedDeviceResource {
	out := map[string][]*structs.AllocatedDeviceResource{}
	for i, chosen := range c.chosen {
		task := s.ask.devices[i].task
		out[task] = append(out[task], allocatedDevices(chosen)...)
	}
	return out
}

func (s *Stack) scoreMap(c *Candidate) map[string]float64 {
	out := make(map[string]float64, len(s.rankers))
	for i, r := range s.rankers {
		out[r.Name()] = c.scores[i]
	}
	return out
}

// better orders candidates: higher score, then the seeded tie-breaker.
func better(a, b *Candidate) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.tie < b.tie
}

// keepTop inserts c into top (best first), keeping at most maxScoreMeta.
func keepTop(top []*Candidate, c *Candidate) []*Candidate {
	i, _ := slices.BinarySearchFunc(top, c, func(x, y *Candidate) int {
		if better(x, y) {
			return -1
		}
		return 1
	})
	if i >= maxScoreMeta {
		return top
	}
	top = slices.Insert(top, i, c)
	if len(top) > maxScoreMeta {
		top = top[:maxScoreMeta]
	}
	return top
}
