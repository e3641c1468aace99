// Package services registers the services of the allocations a client
// runs in the servers' built-in registry (provider = "nomad") and runs
// their checks (http, tcp, script) on the client. An allocation's
// services are registered once all its tasks run and deregistered when
// it stops; check results are kept per allocation for its health
// (Manager.AllocChecksHealthy) and check_restart restarts a task whose
// check keeps failing. It does not decide placement or talk to drivers
// other than through the alloc runner's exec and restart.
package services

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/structs"
)

// Server is where registrations go (the client's RPC to the servers).
type Server interface {
	Register(ctx context.Context, regs []*structs.ServiceRegistration) error
	Deregister(ctx context.Context, allocIDs []string) error
}

// Runner is what the manager needs of an allocation's runner.
type Runner interface {
	Execer
	Restarter
	// Alloc returns the allocation as the runner has it (Job included).
	Alloc() *structs.Allocation
}

// Config configures a Manager.
type Config struct {
	Server Server
	// Lookup returns the runner of a running allocation, or false.
	Lookup func(allocID string) (Runner, bool)
	// NodeID and Address are the node's: Address is the services' address
	// unless a service or its port's host IP names another.
	NodeID  string
	Address string
	Logger  hclog.Logger
	Clock   Clock
	// RetryInterval is how soon a failed registration is tried again; 0
	// is 5s.
	RetryInterval time.Duration
}

// Manager keeps the registrations and checks of a client's allocations.
// Observe feeds it allocation states; Run does the work.
type Manager struct {
	cfg    Config
	logger hclog.Logger
	kick   chan struct{}

	mu      sync.Mutex
	states  map[string]string // alloc ID -> newest client status, not yet handled
	tracked map[string]*allocServices
}

// allocServices are one allocation's registrations and running checks.
type allocServices struct {
	regs       []*structs.ServiceRegistration
	registered bool
	checks     []*checkRunner
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

// New returns a manager; run it with Run.
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = 5 * time.Second
	}
	return &Manager{
		cfg: cfg, logger: cfg.Logger.Named("services"), kick: make(chan struct{}, 1),
		states: map[string]string{}, tracked: map[string]*allocServices{},
	}
}

// Observe records an allocation's client status. It never blocks: it is
// called from alloc runner updates.
func (m *Manager) Observe(a *structs.Allocation) {
	if m == nil || a == nil {
		return
	}
	m.mu.Lock()
	m.states[a.ID] = a.ClientStatus
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Run handles observed states until ctx ends, then stops every check
// (registrations stay: the servers drop them with their allocations).
func (m *Manager) Run(ctx context.Context) {
	defer m.stopAll()
	for {
		m.handle(ctx)
		select {
		case <-ctx.Done():
			return
		case <-m.kick:
		case <-m.cfg.Clock.After(m.cfg.RetryInterval):
		}
	}
}

// handle registers the allocations that run and deregisters those that
// stopped, and retries registrations that failed.
func (m *Manager) handle(ctx context.Context) {
	m.mu.Lock()
	states := m.states
	m.states = map[string]string{}
	var retry []string
	for id, t := range m.tracked {
		if !t.registered {
			retry = append(retry, id)
		}
	}
	m.mu.Unlock()
	for id, status := range states {
		switch status {
		case structs.AllocClientStatusRunning:
			m.start(ctx, id)
		case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
			m.stop(ctx, id)
		}
	}
	for _, id := range retry {
		if _, changed := states[id]; !changed {
			m.register(ctx, id)
		}
	}
}

// start builds and registers an allocation's services once and starts
// its checks.
func (m *Manager) start(ctx context.Context, allocID string) {
	m.mu.Lock()
	_, known := m.tracked[allocID]
	m.mu.Unlock()
	if known {
		m.register(ctx, allocID) // again if it failed
		return
	}
	r, ok := m.cfg.Lookup(allocID)
	if !ok {
		return
	}
	alloc := r.Alloc()
	services := allocServicesOf(alloc)
	if len(services) == 0 {
		return
	}
	t := &allocServices{}
	cctx, cancel := context.WithCancel(ctx)
	t.cancel = cancel
	for _, s := range services {
		at := m.target(alloc, s.service.PortLabel, s.service.AddressMode, s.service.Address)
		reg := &structs.ServiceRegistration{
			ID: registrationID(alloc, s), ServiceName: s.service.Name, NodeID: m.cfg.NodeID, AllocID: alloc.ID,
			JobID: alloc.JobID, Namespace: alloc.Namespace, Tags: append([]string(nil), s.service.Tags...),
			Address: at.Address, Port: at.Port,
		}
		t.regs = append(t.regs, reg)
		for i, c := range s.service.Checks {
			cat := at
			if c.PortLabel != "" {
				cat = m.target(alloc, c.PortLabel, c.AddressMode, "")
			}
			id := fmt.Sprintf("%s-check-%d", reg.ID, i)
			cr := newCheckRunner(id, s.service.Name, c, cat, r, r, m.cfg.Clock,
				m.logger.With("alloc_id", alloc.ID, "service", s.service.Name))
			cr.result.Group = alloc.TaskGroup
			cr.started = func(task string) time.Time { return taskStarted(r.Alloc(), task) }
			t.checks = append(t.checks, cr)
		}
	}
	m.mu.Lock()
	m.tracked[allocID] = t
	m.mu.Unlock()
	for _, cr := range t.checks {
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			cr.run(cctx)
		}()
	}
	m.register(ctx, allocID)
}

// register sends an allocation's registrations unless they went.
func (m *Manager) register(ctx context.Context, allocID string) {
	m.mu.Lock()
	t := m.tracked[allocID]
	m.mu.Unlock()
	if t == nil || t.registered {
		return
	}
	if err := m.cfg.Server.Register(ctx, t.regs); err != nil {
		m.logger.Warn("registering services; will retry", "alloc_id", allocID, "error", err)
		return
	}
	m.mu.Lock()
	t.registered = true
	m.mu.Unlock()
	m.logger.Debug("services registered", "alloc_id", allocID, "count", len(t.regs))
}

// Reregister sends every tracked allocation's registrations again: the
// client calls it when the servers may have dropped them (its node was
// marked down while it could not heartbeat, or forgotten).
func (m *Manager) Reregister() {
	if m == nil {
		return
	}
	m.mu.Lock()
	for _, t := range m.tracked {
		t.registered = false
	}
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// stop ends an allocation's checks and deregisters its services.
func (m *Manager) stop(ctx context.Context, allocID string) {
	m.mu.Lock()
	t := m.tracked[allocID]
	delete(m.tracked, allocID)
	m.mu.Unlock()
	if t == nil {
		return
	}
	t.cancel()
	t.wg.Wait()
	if err := m.cfg.Server.Deregister(ctx, []string{allocID}); err != nil {
		// The servers drop them anyway once the allocation's end reaches them.
		m.logger.Warn("deregistering services", "alloc_id", allocID, "error", err)
	}
}

func (m *Manager) stopAll() {
	m.mu.Lock()
	tracked := m.tracked
	m.tracked = map[string]*allocServices{}
	m.mu.Unlock()
	for _, t := range tracked {
		t.cancel()
		t.wg.Wait()
	}
}

// AllocChecksHealthy reports whether every check of the allocation's
// services passes. known is false while the allocation is not tracked
// (no services, not running yet, or stopped) or a check has no result
// yet. An allocation with services but no checks is healthy.
func (m *Manager) AllocChecksHealthy(allocID string) (healthy bool, known bool) {
	m.mu.Lock()
	t := m.tracked[allocID]
	m.mu.Unlock()
	if t == nil {
		return false, false
	}
	healthy = true
	for _, cr := range t.checks {
		switch cr.latest().Status {
		case StatusPending:
			return false, false
		case StatusPassing:
		default:
			healthy = false
		}
	}
	return healthy, true
}

// AllocChecks returns the latest result of each check of the
// allocation, sorted by ID (nil when it is not tracked).
func (m *Manager) AllocChecks(allocID string) []CheckResult {
	m.mu.Lock()
	t := m.tracked[allocID]
	m.mu.Unlock()
	if t == nil {
		return nil
	}
	out := make([]CheckResult, 0, len(t.checks))
	for _, cr := range t.checks {
		out = append(out, cr.latest())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// taskStarted returns when the allocation's task last started or
// restarted, or zero.
func taskStarted(a *structs.Allocation, task string) time.Time {
	if a == nil || a.TaskStates[task] == nil {
		return time.Time{}
	}
	ts := a.TaskStates[task]
	if ts.LastRestart.After(ts.StartedAt) {
		return ts.LastRestart
	}
	return ts.StartedAt
}

// serviceOf is a service with the task it is declared in ("" for the
// group).
type serviceOf struct {
	service *structs.Service
	task    string
}

func allocServicesOf(a *structs.Allocation) []serviceOf {
	if a == nil || a.Job == nil {
		return nil
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return nil
	}
	var out []serviceOf
	for _, s := range tg.Services {
		if s != nil && s.Provider != structs.ServiceProviderConsul {
			out = append(out, serviceOf{service: s})
		}
	}
	for _, t := range tg.Tasks {
		for _, s := range t.Services {
			if s != nil && s.Provider != structs.ServiceProviderConsul {
				out = append(out, serviceOf{service: s, task: t.Name})
			}
		}
	}
	return out
}

// registrationID is Nomad's: _nomad-task-<alloc>-<group-<g>|<task>>-
// <service>-<port>.
func registrationID(a *structs.Allocation, s serviceOf) string {
	owner := "group-" + a.TaskGroup
	if s.task != "" {
		owner = s.task
	}
	return fmt.Sprintf("%s%s-%s-%s", structs.RegistrationIDPrefix(a.ID), owner, s.service.Name, s.service.PortLabel)
}

// target resolves a port label (or number) of the allocation to an
// address and port: address is the service's own when set, else the
// port's host IP, else the node's.
func (m *Manager) target(a *structs.Allocation, label, mode, address string) target {
	t := target{Address: m.cfg.Address}
	if n, ok := structs.PortNumber(label); ok {
		t.Port = n
	} else if a.AllocatedResources != nil {
		if p, ok := a.AllocatedResources.Shared.Port(label); ok {
			t.Port = p.Value
			if (mode == structs.AddressModeDriver || mode == structs.AddressModeAlloc) && p.To > 0 {
				t.Port = p.To
			}
			if p.HostIP != "" && !net.ParseIP(p.HostIP).IsUnspecified() {
				t.Address = p.HostIP
			}
		}
	}
	if address != "" {
		t.Address = address
	}
	return t
}
