package feasible

import (
	"github.com/droverhq/drover/server/scheduler/frag"
	"github.com/droverhq/drover/structs"
)

// Algorithms a Stack ranks with (the operator scheduler configuration's
// SchedulerAlgorithm).
const (
	AlgorithmFGD     = "fgd"     // fragmentation-aware bin-packing (default)
	AlgorithmBinpack = "binpack" // fill the fullest node
	AlgorithmSpread  = "spread"  // fill the emptiest node
)

// The stages a Stack takes from its caller: they read what only the
// scheduler knows (reservations, the cluster's allocations, quotas,
// queues), so the scheduler implements them; NewStack puts them in their
// place in the chain. A Stack without one skips that stage.

// Reservations is the reservation stage: on a node that a waiting gang of
// another job reserved, Hold returns u with the node's free GPUs shown as
// held (structs.NodeUsage.Hold), else u itself.
type Reservations interface {
	Hold(n *structs.Node, u *structs.NodeUsage) *structs.NodeUsage
}

// Preempter is the preemption stage: when no node fits as things are,
// Preempt looks for the node where the placement fits once allocations it
// may preempt stop (asking s's SelectOn and FitsOn), and returns the
// option there and those victims, or nil.
type Preempter interface {
	Preempt(s *Stack) (*Option, []*structs.Allocation, error)
}

// Gate is an admission stage (a namespace's quota, a fair-share queue).
// Admit returns o when placing it keeps the gate's limit, counting it
// (what victims, the allocations o preempts, held is given back first),
// or nil with the reason recorded in m; undo takes back what the call
// counted, for when a later gate refuses o (nil: nothing was counted).
type Gate interface {
	Admit(o *Option, victims []*structs.Allocation, m *structs.AllocMetric) (admitted *Option, undo func(), err error)
}

// StackOption tunes a Stack.
type StackOption func(*stackConfig)

// stackConfig is what the options set, for NewStack to build from.
type stackConfig struct {
	algorithm    string
	workload     frag.Workload
	limit        int
	cache        *NodeCache
	distinct     []CandidateFilter
	spreadLive   []*structs.Node
	reservations Reservations
	preempter    Preempter
	quota, queue Gate
}

// WithAlgorithm sets the ranking algorithm ("" is AlgorithmFGD).
func WithAlgorithm(name string) StackOption {
	return func(c *stackConfig) {
		if name != "" {
			c.algorithm = name
		}
	}
}

// WithWorkload sets the GPU workload the fragmentation stage expects
// more of (by default, the ask itself).
func WithWorkload(w frag.Workload) StackOption { return func(c *stackConfig) { c.workload = w } }

// WithLimit sets how many feasible nodes a placement scores before it
// stops looking; 0 scores every node.
func WithLimit(n int) StackOption { return func(c *stackConfig) { c.limit = n } }

// WithNodeCache shares nc between the Stacks of many evaluations, so each
// node's filter verdict and device matches are worked out once per kind
// of ask (by default a Stack has a cache of its own).
func WithNodeCache(nc *NodeCache) StackOption { return func(c *stackConfig) { c.cache = nc } }

// WithCandidateFilter adds a candidate filter built outside the stack: one
// that counts the whole job's allocations, like distinct_property. If it
// has a Placed(*structs.Node) method, the Stack's Placed calls it.
func WithCandidateFilter(f CandidateFilter) StackOption {
	return func(c *stackConfig) { c.distinct = append(c.distinct, f) }
}

// WithSpreadLive gives the spread stage the nodes of the group's live
// allocations (one entry per allocation), the plan's included.
func WithSpreadLive(live []*structs.Node) StackOption {
	return func(c *stackConfig) { c.spreadLive = live }
}

// WithReservations sets the reservation stage.
func WithReservations(r Reservations) StackOption {
	return func(c *stackConfig) { c.reservations = r }
}

// WithPreemption sets the preemption stage.
func WithPreemption(p Preempter) StackOption { return func(c *stackConfig) { c.preempter = p } }

// WithQuota sets the quota admission stage.
func WithQuota(g Gate) StackOption { return func(c *stackConfig) { c.quota = g } }

// WithQueue sets the fair-share queue admission stage.
func WithQueue(g Gate) StackOption { return func(c *stackConfig) { c.queue = g } }

// placedTracker is a stage that counts the placements made.
type placedTracker interface {
	Placed(n *structs.Node)
}

// ranker is a Ranker with its weight in the node's score.
type ranker struct {
	Ranker
	weight float64
}

// Stack is the placement chain of one task group: every stage one
// placement passes, in the order NewStack lists them. It is built once per
// group and evaluation, then asked for one node per placement (Place).
// Not safe for concurrent use.
type Stack struct {
	ask       *ask
	seed      string
	algorithm string
	limit     int

	filters          []Filter
	candidateFilters []CandidateFilter
	reservations     Reservations
	fits             []Fit
	rankers          []ranker
	preempter        Preempter
	gates            []Gate

	penalty    *ReschedulePenaltyRank
	candidates []*Candidate // scratch: the current walk's, reused by the next
	used       int          // candidates handed out in the current walk
	cache      *NodeCache   // the filters' verdicts and device matches
	kind       string       // the ask's key in cache
	matcher    *deviceMatcher
	trackers   []placedTracker
}

// NewStack builds the placement chain for one task group of job: every
// stage, in order, one statement each. seed breaks ties between equally
// scored nodes (the scheduler passes the eval ID: one evaluation is
// deterministic, while concurrent ones spread out).
//
// A gang's all-or-nothing rule is not a stage here: it needs every
// group's placements, so the scheduler applies it to the whole plan once
// they are made (gang.go). The gang's reservation is the reservation
// stage.
func NewStack(job *structs.Job, tg *structs.TaskGroup, seed string, opts ...StackOption) *Stack {
	cfg := stackConfig{algorithm: AlgorithmFGD, limit: DefaultLimit}
	for _, o := range opts {
		o(&cfg)
	}
	a, checker := newAsk(job, tg), NewChecker()
	devices := newDeviceMatcher(a.devices, checker)
	s := &Stack{ask: a, seed: seed, algorithm: cfg.algorithm, limit: cfg.limit, matcher: devices, cache: cfg.cache}
	gpu, fgd, spread := a.gpus > 0, cfg.algorithm == AlgorithmFGD, cfg.algorithm == AlgorithmSpread

	// Feasibility: node facts, judged once per node object and kind of ask (NodeCache).
	s.filter(ReadyFilter{})                                 // up, eligible, not draining
	s.filter(NewDatacenterFilter(job.Datacenters))          // in one of the job's datacenters
	s.filter(NewDriverFilter(a.drivers()))                  // every task's driver healthy
	s.filter(NewConstraintFilter(a.constraints(), checker)) // job, group, task constraints
	s.filter(&DeviceConstraintFilter{devices: devices})     // each device request matches an instance
	if f := NewHostVolumeFilter(tg); f != nil {
		s.filter(f) // every host volume offered, writable where needed
	}
	// Feasibility given the plan so far.
	s.candidateFilters = append(s.candidateFilters, cfg.distinct...) // distinct_property, over the whole job
	if f := NewDistinctHostsFilter(job, tg); f != nil {
		s.candidateFilters = append(s.candidateFilters, f) // distinct_hosts: no other alloc of the job here
	}
	// Reservation: a waiting gang's nodes show their free GPUs as held.
	s.reservations = cfg.reservations
	// Fit: CPU and memory next to what the node holds.
	s.fits = append(s.fits, &ResourceFit{ask: a})
	// GPU topology (filter and rank): which free instances, best-connected
	// first; topology = "nvlink" | "numa" is required.
	topology := &TopologyPicker{}
	// GPU fit: enough free healthy instances (or room for a slice) per request.
	s.fits = append(s.fits, &DeviceFit{devices: devices, picker: topology})
	// Ports: static ones free on the node, dynamic ones chosen from its range.
	if f := NewPortFit(tg, seed); f != nil {
		s.fits = append(s.fits, f)
	}
	// Bin-pack: fill nodes, GPUs weighted most (or, with "spread", empty ones).
	s.rank(&BinPackRank{ask: a, spread: spread}, 1)
	// Fragmentation: the node whose use harms least what the cluster can still place.
	if fgd && gpu {
		s.rank(newFragRank(a, cfg.workload), fragWeight)
	}
	// Job anti-affinity: spread the group's own allocations.
	s.rank(NewJobAntiAffinityRank(job, tg), 1)
	// Reschedule penalty: leave the nodes where the placement's predecessors failed.
	s.penalty = &ReschedulePenaltyRank{}
	s.rank(s.penalty, penaltyWeight)
	// GPU reserve: keep GPU nodes free for GPU work.
	if !gpu {
		s.rank(GPUReserveRank{}, 1)
	}
	// Node affinity: the job's, group's and tasks' (any node may match: no limit).
	if r := NewNodeAffinityRank(a.affinities(), checker); r != nil {
		s.rankAll(r, 1)
	}
	// Device affinity: the device requests', against the chosen instances.
	if r := newDeviceAffinityRank(a.devices, checker); r != nil {
		s.rankAll(r, 1)
	}
	// Spread: the spread blocks' targets over attribute values.
	if r := NewSpreadRank(job, tg, cfg.spreadLive); r != nil {
		s.rankAll(r, r.StageWeight())
	}
	// Preemption: when nothing fits, stop the fewest lower-priority allocations.
	s.preempter = cfg.preempter
	// Quota admission: the namespace stays within its quota.
	s.gate(cfg.quota)
	// Queue admission: the job's fair-share queue stays within its share.
	s.gate(cfg.queue)

	if spread && !gpu {
		s.limit = 0 // no GPU order to walk emptiest first
	}
	s.finish(job)
	return s
}

// filter adds a node filter.
func (s *Stack) filter(f Filter) { s.filters = append(s.filters, f) }

// rank adds a ranker.
func (s *Stack) rank(r Ranker, weight float64) {
	s.rankers = append(s.rankers, ranker{Ranker: r, weight: weight})
}

// rankAll adds a ranker that any node may score well on, so placements
// score every node.
func (s *Stack) rankAll(r Ranker, weight float64) {
	s.rank(r, weight)
	s.limit = 0
}

// gate adds an admission stage, when there is one.
func (s *Stack) gate(g Gate) {
	if g != nil {
		s.gates = append(s.gates, g)
	}
}

// finish sets up what the stages share: the node cache and the stages
// that count placements.
func (s *Stack) finish(job *structs.Job) {
	if s.cache == nil {
		s.cache = NewNodeCache()
	}
	s.kind = askKind(s.ask, job.Datacenters)
	for _, f := range s.candidateFilters {
		if t, ok := f.(placedTracker); ok {
			s.trackers = append(s.trackers, t)
		}
	}
	for _, r := range s.rankers {
		if t, ok := r.Ranker.(placedTracker); ok {
			s.trackers = append(s.trackers, t)
		}
	}
}

// Place runs the chain for one placement: Select; when no node fits, the
// preemption stage; then the admission gates, in order, over the option.
// It returns the option admitted (nil: none), the allocations it
// preempts, and the metric explaining it either way. An error comes only
// from view or a stage's reads. The caller tells the Stack with Placed
// once it makes the placement.
func (s *Stack) Place(view View) (*Option, []*structs.Allocation, *structs.AllocMetric, error) {
	option, m, err := s.Select(view)
	if err != nil {
		return nil, nil, m, err
	}
	var victims []*structs.Allocation
	if option == nil && s.preempter != nil {
		if option, victims, err = s.preempter.Preempt(s); err != nil {
			return nil, nil, m, err
		}
	}
	if option, err = s.Admit(option, victims, m); err != nil || option == nil {
		return nil, nil, m, err
	}
	return option, victims, m, nil
}

// Admit runs the admission gates over option (nil: returned as is). When
// a gate refuses it, those before take back what they counted.
func (s *Stack) Admit(option *Option, victims []*structs.Allocation, m *structs.AllocMetric) (*Option, error) {
	if option == nil {
		return nil, nil
	}
	var buf [2]func()
	undos := buf[:0]
	for _, g := range s.gates {
		next, undo, err := g.Admit(option, victims, m)
		if err != nil || next == nil {
			for _, u := range undos {
				u()
			}
			return nil, err
		}
		if undo != nil {
			undos = append(undos, undo)
		}
		option = next
	}
	return option, nil
}

// hold applies the reservation stage to u, the usage of n.
func (s *Stack) hold(n *structs.Node, u *structs.NodeUsage) *structs.NodeUsage {
	if s.reservations == nil {
		return u
	}
	return s.reservations.Hold(n, u)
}
