package services

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// manualClock is a clock that moves only when told; After fires at once
// (tests drive check runs with once, not with the loop).
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *manualClock) After(time.Duration) <-chan time.Time { return make(chan time.Time) }

// fakeTask is a running task: exec answers with code, restarts are
// recorded.
type fakeTask struct {
	mu       sync.Mutex
	code     int
	err      error
	restarts []string
	alloc    *structs.Allocation
}

func (f *fakeTask) ExecTask(ctx context.Context, task string, opts *drivers.ExecOptions) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if opts.Stdout != nil {
		_, _ = opts.Stdout.Write([]byte(strings.Join(opts.Command, " ")))
	}
	return f.code, f.err
}

func (f *fakeTask) RestartTask(task, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restarts = append(f.restarts, task+": "+reason)
	return nil
}

func (f *fakeTask) Alloc() *structs.Allocation { return f.alloc }

func (f *fakeTask) restarted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.restarts...)
}

func targetOf(t *testing.T, rawURL string) target {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(u.Host)
	n, _ := strconv.Atoi(port)
	return target{Address: host, Port: n}
}

func TestHTTPCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			if r.Header.Get("X-Probe") != "drover" || r.Method != http.MethodPost {
				w.WriteHeader(http.StatusBadRequest)
			}
		case "/busy":
			w.WriteHeader(http.StatusTooManyRequests)
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	at := targetOf(t, srv.URL)
	tests := []struct {
		name, path, method string
		timeout            time.Duration
		want               string
	}{
		{"2xx passes", "/ok", http.MethodPost, time.Second, StatusPassing},
		{"429 warns", "/busy", "", time.Second, StatusWarning},
		{"5xx fails", "/broken", "", time.Second, StatusCritical},
		{"timeout fails", "/slow", "", 50 * time.Millisecond, StatusCritical},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &structs.ServiceCheck{Type: "http", Path: tt.path, Method: tt.method, Header: map[string][]string{"X-Probe": {"drover"}}}
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			start := time.Now()
			got, out := runCheck(ctx, c, at, nil, &http.Client{})
			if got != tt.want {
				t.Errorf("status %q (%s), want %q", got, out, tt.want)
			}
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Errorf("took %v: the timeout did not cut it off", elapsed)
			}
		})
	}
}

func TestTCPCheck(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	at := targetOf(t, "tcp://"+ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if got, out := runCheck(ctx, &structs.ServiceCheck{Type: "tcp"}, at, nil, nil); got != StatusPassing {
		t.Errorf("open port: %q (%s), want passing", got, out)
	}
	ln.Close()
	if got, _ := runCheck(ctx, &structs.ServiceCheck{Type: "tcp"}, at, nil, nil); got != StatusCritical {
		t.Errorf("closed port: %q, want critical", got)
	}
}

func TestScriptCheck(t *testing.T) {
	tests := []struct {
		code int
		err  error
		want string
	}{
		{0, nil, StatusPassing},
		{1, nil, StatusWarning},
		{2, nil, StatusCritical},
		{0, errors.New("task not running"), StatusCritical},
	}
	for _, tt := range tests {
		ex := &fakeTask{code: tt.code, err: tt.err}
		c := &structs.ServiceCheck{Type: "script", Command: "/bin/check", Args: []string{"-v"}, TaskName: "t"}
		got, out := runCheck(context.Background(), c, target{}, ex, nil)
		if got != tt.want {
			t.Errorf("code %d err %v: %q (%s), want %q", tt.code, tt.err, got, out, tt.want)
		}
	}
}

// TestCheckThresholds: success_before_passing and
// failures_before_critical hold the status until enough runs agree.
func TestCheckThresholds(t *testing.T) {
	clock := &manualClock{now: time.Unix(1000, 0)}
	c := &structs.ServiceCheck{Name: "c", SuccessBeforePassing: 2, FailuresBeforeCritical: 2}
	cr := newCheckRunner("id", "web", c, target{}, nil, nil, clock, nil)
	steps := []struct{ run, want string }{
		{StatusPassing, StatusPending},
		{StatusPassing, StatusPassing},
		{StatusCritical, StatusPassing},
		{StatusCritical, StatusCritical},
		{StatusPassing, StatusCritical},
	}
	for i, s := range steps {
		cr.record(s.run, "")
		if got := cr.latest().Status; got != s.want {
			t.Errorf("step %d: status %q, want %q", i, got, s.want)
		}
	}
}

// TestCheckRestart: after the grace period, limit consecutive failures
// of a real HTTP check restart the task, once, and the count starts over.
func TestCheckRestart(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	clock := &manualClock{now: time.Unix(1000, 0)}
	task := &fakeTask{}
	c := &structs.ServiceCheck{Name: "health", Type: "http", Path: "/", TaskName: "server", Interval: time.Second, Timeout: time.Second,
		CheckRestart: &structs.CheckRestart{Limit: 2, Grace: 10 * time.Second}}
	cr := newCheckRunner("id", "web", c, targetOf(t, srv.URL), task, task, clock, nil)
	ctx := context.Background()
	cr.once(ctx)
	cr.once(ctx)
	if got := task.restarted(); len(got) != 0 {
		t.Fatalf("restarted within the grace period: %v", got)
	}
	clock.advance(11 * time.Second)
	cr.once(ctx)
	if got := task.restarted(); len(got) != 0 {
		t.Fatalf("restarted after one failure, limit 2: %v", got)
	}
	cr.once(ctx)
	want := `server: healthcheck: check "health" unhealthy`
	if got := task.restarted(); len(got) != 1 || got[0] != want {
		t.Fatalf("restarts %v, want [%s]", got, want)
	}
	cr.once(ctx)
	cr.once(ctx)
	if got := task.restarted(); len(got) != 1 {
		t.Fatalf("restarted again within the new grace period: %v", got)
	}
}

type fakeServer struct {
	mu     sync.Mutex
	regs   []*structs.ServiceRegistration
	dereg  []string
	failed int // fail this many Register calls first
}

func (s *fakeServer) Register(_ context.Context, regs []*structs.ServiceRegistration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed > 0 {
		s.failed--
		return errors.New("no server")
	}
	s.regs = append(s.regs, regs...)
	return nil
}

func (s *fakeServer) Deregister(_ context.Context, ids []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dereg = append(s.dereg, ids...)
	return nil
}

func (s *fakeServer) snapshot() ([]*structs.ServiceRegistration, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*structs.ServiceRegistration(nil), s.regs...), append([]string(nil), s.dereg...)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestManagerLifecycle: a running allocation's services are registered
// (after a failed try) with the port's address, its check feeds
// AllocChecksHealthy, and its end deregisters them.
func TestManagerLifecycle(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	at := targetOf(t, srv.URL)
	job := &structs.Job{ID: "web", Namespace: "default", TaskGroups: []*structs.TaskGroup{{Name: "g",
		Services: []*structs.Service{{Name: "web", PortLabel: "http", Tags: []string{"v1"}, Provider: "nomad",
			Checks: []*structs.ServiceCheck{{Name: "up", Type: "http", Path: "/", Interval: time.Second, Timeout: time.Second}}}},
		Tasks: []*structs.Task{{Name: "t", Services: []*structs.Service{{Name: "admin", PortLabel: "9", Provider: "nomad"}}}}}}}
	alloc := &structs.Allocation{ID: "a1", JobID: "web", Namespace: "default", TaskGroup: "g", Job: job,
		AllocatedResources: &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
			Ports: []structs.AllocatedPortMapping{{Label: "http", Value: at.Port, HostIP: at.Address}}}}}
	task := &fakeTask{alloc: alloc}
	server := &fakeServer{failed: 1}
	m := New(Config{Server: server, NodeID: "n1", Address: "10.9.9.9", RetryInterval: 20 * time.Millisecond,
		Lookup: func(id string) (Runner, bool) { return task, id == "a1" }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	if _, known := m.AllocChecksHealthy("a1"); known {
		t.Fatal("health known before the allocation runs")
	}
	m.Observe(&structs.Allocation{ID: "a1", ClientStatus: structs.AllocClientStatusRunning})
	waitFor(t, "registration", func() bool { regs, _ := server.snapshot(); return len(regs) == 2 })
	regs, _ := server.snapshot()
	byName := map[string]*structs.ServiceRegistration{}
	for _, r := range regs {
		byName[r.ServiceName] = r
	}
	if r := byName["web"]; r == nil || r.Address != at.Address || r.Port != at.Port || r.NodeID != "n1" || r.ID != "_nomad-task-a1-group-g-web-http" {
		t.Errorf("web registration %+v, want %s:%d", r, at.Address, at.Port)
	}
	if r := byName["admin"]; r == nil || r.Address != "10.9.9.9" || r.Port != 9 || r.ID != "_nomad-task-a1-t-admin-9" {
		t.Errorf("admin registration %+v, want the node's address and port 9", r)
	}
	waitFor(t, "healthy checks", func() bool { h, known := m.AllocChecksHealthy("a1"); return h && known })
	// Group is in Nomad's api.AllocCheckStatus too.
	if res := m.AllocChecks("a1"); len(res) != 1 || res[0].Status != StatusPassing || res[0].Service != "web" || res[0].Group != "g" {
		t.Errorf("check results %+v", res)
	}

	m.Observe(&structs.Allocation{ID: "a1", ClientStatus: structs.AllocClientStatusComplete})
	waitFor(t, "deregistration", func() bool { _, d := server.snapshot(); return len(d) == 1 && d[0] == "a1" })
	if _, known := m.AllocChecksHealthy("a1"); known {
		t.Error("health still known after the allocation stopped")
	}
}

// TestHTTPSCheck: an https check verifies the certificate unless
// tls_skip_verify; the body is sent.
func TestHTTPSCheck(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 4)
		if n, _ := r.Body.Read(b); string(b[:n]) != "ping" {
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	at := targetOf(t, srv.URL)
	for _, skip := range []bool{false, true} {
		c := &structs.ServiceCheck{Type: "http", Protocol: "https", Path: "/", Method: http.MethodPost, Body: "ping", TLSSkipVerify: skip}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, out := runCheck(ctx, c, at, nil, checkHTTPClient(skip))
		cancel()
		want := StatusCritical // a self-signed certificate
		if skip {
			want = StatusPassing
		}
		if got != want {
			t.Errorf("tls_skip_verify %v: %q (%s), want %q", skip, got, out, want)
		}
	}
}

// waitsClock records the waits asked of it and never fires.
type waitsClock struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (c *waitsClock) Now() time.Time { return time.Unix(1000, 0) }
func (c *waitsClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	return make(chan time.Time)
}

// TestCheckIntervalFloor: a check whose interval is under the minimum
// (not possible through submit, but the runner does not trust that)
// waits at least MinCheckInterval between runs instead of spinning.
func TestCheckIntervalFloor(t *testing.T) {
	clock := &waitsClock{}
	c := &structs.ServiceCheck{Name: "c", Type: "tcp", Interval: time.Nanosecond, Timeout: time.Second}
	cr := newCheckRunner("id", "web", c, target{}, nil, nil, clock, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); cr.run(ctx) }()
	waitFor(t, "a wait", func() bool { clock.mu.Lock(); defer clock.mu.Unlock(); return len(clock.waits) > 0 })
	cancel()
	<-done
	clock.mu.Lock()
	defer clock.mu.Unlock()
	if len(clock.waits) != 1 || clock.waits[0] != structs.MinCheckInterval {
		t.Errorf("waits %v, want one of %v", clock.waits, structs.MinCheckInterval)
	}
}

// TestCheckRestartGraceAfterPolicyRestart: a task restarted by its
// restart policy (not by the check) gets check_restart's grace again, as
// Nomad's: failures while it starts up do not count.
func TestCheckRestartGraceAfterPolicyRestart(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	clock := &manualClock{now: time.Unix(1000, 0)}
	task := &fakeTask{alloc: &structs.Allocation{TaskStates: map[string]*structs.TaskState{"server": {StartedAt: clock.Now()}}}}
	c := &structs.ServiceCheck{Name: "health", Type: "http", Path: "/", TaskName: "server", Interval: time.Second, Timeout: time.Second,
		CheckRestart: &structs.CheckRestart{Limit: 2, Grace: 10 * time.Second}}
	cr := newCheckRunner("id", "web", c, targetOf(t, srv.URL), task, task, clock, nil)
	cr.started = func(name string) time.Time { return taskStarted(task.Alloc(), name) }
	ctx := context.Background()

	clock.advance(20 * time.Second)
	task.alloc.TaskStates["server"].LastRestart = clock.Now() // the restart policy restarted it
	cr.once(ctx)
	cr.once(ctx)
	if got := task.restarted(); len(got) != 0 {
		t.Fatalf("restarted within the grace period after a policy restart: %v", got)
	}
	clock.advance(11 * time.Second)
	cr.once(ctx)
	cr.once(ctx)
	if got := task.restarted(); len(got) != 1 {
		t.Fatalf("restarts %v after the grace period, want one", got)
	}
}
