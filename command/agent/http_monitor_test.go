package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	nomad "github.com/hashicorp/nomad/api"
)

// openMonitor starts a monitor request and returns its answer once the
// headers are in (the sink is registered by then); the stream ends with
// the test.
func openMonitor(t *testing.T, url, token string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Nomad-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", url, err)
	}
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
	})
	return resp
}

// readUntil reads lines of r until one contains want and returns the
// lines read, or fails after timeout. The reader goroutine ends when the
// stream is closed (openMonitor's cleanup).
func readUntil(t *testing.T, r io.Reader, want string, timeout time.Duration) []string {
	t.Helper()
	found := make(chan []string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), want) {
				found <- lines
				return
			}
		}
		close(found)
	}()
	select {
	case lines, ok := <-found:
		if !ok {
			t.Fatalf("stream ended without %q", want)
		}
		return lines
	case <-time.After(timeout):
		t.Fatalf("no line with %q after %s", want, timeout)
	}
	return nil
}

// TestMonitorStreamsTheAgentsLog: a monitor at debug sees a debug line
// the agent logs (though the agent itself logs at WARN), not a trace
// line; log_json gives hclog's JSON; Nomad's Go client reads the framed
// stream.
func TestMonitorStreamsTheAgentsLog(t *testing.T) {
	a, base := newTestAgent(t)
	resp := openMonitor(t, base+"/v1/agent/monitor?log_level=debug&plain=true", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("monitor: %d", resp.StatusCode)
	}
	a.logger.Named("probe").Trace("too fine to see")
	a.logger.Named("probe").Debug("monitor marker", "n", 1)
	lines := readUntil(t, resp.Body, "monitor marker", 10*time.Second)
	last := lines[len(lines)-1]
	if !strings.Contains(last, "[DEBUG]") || !strings.Contains(last, "drover.probe") || !strings.Contains(last, "n=1") {
		t.Errorf("line %q: want hclog's text with level, name and fields", last)
	}
	for _, l := range lines {
		if strings.Contains(l, "too fine to see") {
			t.Errorf("a trace line reached a debug monitor: %q", l)
		}
	}

	resp = openMonitor(t, base+"/v1/agent/monitor?log_level=info&log_json=true&plain=true", "")
	a.logger.Named("probe").Info("json marker")
	lines = readUntil(t, resp.Body, "json marker", 10*time.Second)
	var line map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &line); err != nil || line["@message"] != "json marker" || line["@level"] != "info" {
		t.Errorf("log_json line %q: %v; want hclog's JSON", lines[len(lines)-1], err)
	}

	nc, err := nomad.NewClient(&nomad.Config{Address: base})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	frames, errs := nc.Agent().Monitor(stop, &nomad.QueryOptions{Params: map[string]string{"log_level": "warn"}})
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond) // the stream may not be open yet: log until seen
	defer tick.Stop()
	for {
		select {
		case f := <-frames:
			if f != nil && strings.Contains(string(f.Data), "nomad marker") {
				// Nomad's reader looks at stop between frames: one more
				// frame lets it close the stream.
				close(stop)
				a.logger.Warn("after the marker")
				return
			}
		case err := <-errs:
			t.Fatalf("Nomad's Agent().Monitor: %v", err)
		case <-tick.C:
			a.logger.Warn("nomad marker")
		case <-deadline:
			t.Fatal("Nomad's Agent().Monitor saw no frame with the marker in 10s")
		}
	}
}

// stuckWriter is a response writer whose reader has stopped reading:
// its first Write blocks until release is closed. started closes with
// the answer's header (the monitor's sink is registered by then).
type stuckWriter struct {
	header  http.Header
	once    sync.Once
	started chan struct{}
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	body    bytes.Buffer
}

func newStuckWriter() *stuckWriter {
	return &stuckWriter{header: http.Header{}, started: make(chan struct{}), entered: make(chan struct{}), release: make(chan struct{})}
}

func (s *stuckWriter) Header() http.Header { return s.header }
func (s *stuckWriter) WriteHeader(int)     { close(s.started) }
func (s *stuckWriter) Flush()              {}
func (s *stuckWriter) Write(p []byte) (int, error) {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.body.Write(p)
}

func (s *stuckWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.body.String()
}

// TestMonitorSlowReaderDoesNotBlockTheAgent: while a monitor's reader
// reads nothing, the agent logs on unhindered; past the bounded buffer
// lines are dropped, and the stream says exactly how many once the
// reader reads again.
func TestMonitorSlowReaderDoesNotBlockTheAgent(t *testing.T) {
	logger := hclog.NewInterceptLogger(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Info})
	h := newHTTPAPI(noRoad{}, hclog.NewNullLogger())
	h.logSinks = logger
	h.monitorLines = 8
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := newStuckWriter()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/agent/monitor?plain=true", nil))
	}()
	// The first line is taken and its write blocks: the reader stalls.
	waitClosed(t, w.started, "the monitor answered")
	logger.Info("first")
	waitClosed(t, w.entered, "the monitor writes its first line")
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		for i := range 1000 {
			logger.Info("burst", "i", i)
		}
	}()
	waitClosed(t, logged, "the agent logs 1000 lines while the monitor's reader is stuck")
	close(w.release)
	want := "monitor: dropped 992 log lines"
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(w.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after the reader resumed, the stream %q has no %q (8 buffered of 1000)", w.String(), want)
		}
	}
	if got := strings.Count(w.String(), "burst"); got != 8 {
		t.Errorf("%d burst lines reached the reader, want the 8 the buffer holds", got)
	}
	cancel()
	<-done
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("not in 10s: %s", what)
	}
}

// TestMonitorRequests: bad input is a 400 naming the parameter; another
// agent's log is a 400 saying only the local one is supported; this
// agent named by node ID or server name is served.
func TestMonitorRequests(t *testing.T) {
	a, base := newTestAgent(t)
	tests := []struct {
		query    string
		want     int
		contains string
	}{
		{"log_level=loud", 400, `log_level "loud"`},
		{"log_json=maybe", 400, `log_json "maybe"`},
		{"node_id=0b1a2c3d-0000-0000-0000-000000000000", 400, "only this agent's own log"},
		{"server_id=elsewhere", 400, "only this agent's own log"},
	}
	for _, tt := range tests {
		code, body := send(t, http.MethodGet, base+"/v1/agent/monitor?"+tt.query, "", "")
		if code != tt.want || !strings.Contains(body, tt.contains) || strings.Count(body, "\n") != 1 {
			t.Errorf("?%s: got %d %q, want %d with %q", tt.query, code, body, tt.want, tt.contains)
		}
	}
	for _, q := range []string{"node_id=" + a.LocalNodeID(), "server_id=leader", "server_id=" + a.config.Name} {
		if resp := openMonitor(t, base+"/v1/agent/monitor?"+q, ""); resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("?%s: got %d %q, want 200", q, resp.StatusCode, b)
		}
	}
}

// TestMonitorNeedsAgentRead: with ACLs on the monitor wants agent read.
func TestMonitorNeedsAgentRead(t *testing.T) {
	_, base, mgmt := newACLAgent(t)
	reader := createToken(t, base, mgmt, "reader", `agent { policy = "read" }`)
	other := createToken(t, base, mgmt, "ops", `namespace "default" { policy = "write" }`)
	for _, tt := range []struct {
		name, token string
		want        int
	}{{"anonymous", "", 403}, {"namespace writer", other, 403}, {"agent reader", reader, 200}, {"management", mgmt, 200}} {
		resp := openMonitor(t, base+"/v1/agent/monitor", tt.token)
		if resp.StatusCode != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
}

// TestPprof: profiles need enable_debug without ACLs (on in -dev) and
// agent write with them; unknown profiles and bad parameters are 4xx.
func TestPprof(t *testing.T) {
	_, base := newTestAgent(t)
	code, body := send(t, http.MethodGet, base+"/v1/agent/pprof/goroutine?debug=1", "", "")
	if code != 200 || !strings.Contains(body, "goroutine profile:") {
		t.Errorf("goroutine?debug=1: %d %.80q, want the text profile", code, body)
	}
	if code, body = send(t, http.MethodGet, base+"/v1/agent/pprof/heap", "", ""); code != 200 || len(body) == 0 {
		t.Errorf("heap: %d, %d bytes; want a profile", code, len(body))
	}
	for _, tt := range []struct {
		path     string
		want     int
		contains string
	}{
		{"nope", 404, `profile "nope"`},
		{"goroutine?debug=7", 400, `debug "7"`},
		{"profile?seconds=100000", 400, `seconds "100000"`},
	} {
		if code, body := send(t, http.MethodGet, base+"/v1/agent/pprof/"+tt.path, "", ""); code != tt.want || !strings.Contains(body, tt.contains) {
			t.Errorf("%s: %d %q, want %d with %q", tt.path, code, body, tt.want, tt.contains)
		}
	}

	cfg := DevConfig()
	cfg.Ports = &PortsConfig{}
	cfg.LogLevel = "WARN"
	cfg.Client.Enabled = false
	cfg.EnableDebug = false
	_, plain := startAgentConfig(t, cfg, io.Discard)
	if code, body := send(t, http.MethodGet, plain+"/v1/agent/pprof/goroutine", "", ""); code != 403 || !strings.Contains(body, "enable_debug") {
		t.Errorf("without enable_debug: %d %q, want 403 naming enable_debug", code, body)
	}

	_, aclBase, mgmt := newACLAgent(t)
	reader := createToken(t, aclBase, mgmt, "reader", `agent { policy = "read" }`)
	writer := createToken(t, aclBase, mgmt, "writer", `agent { policy = "write" }`)
	for _, tt := range []struct {
		name, token string
		want        int
	}{{"anonymous", "", 403}, {"agent reader", reader, 403}, {"agent writer", writer, 200}} {
		if code, _ := send(t, http.MethodGet, aclBase+"/v1/agent/pprof/goroutine", tt.token, ""); code != tt.want {
			t.Errorf("with ACLs, %s: %d, want %d", tt.name, code, tt.want)
		}
	}
}

// TestMonitorLimit: at most maxMonitors log streams run at once (each
// formats every line the agent logs); the next is a 429 naming the
// limit, and a closed one frees its place.
func TestMonitorLimit(t *testing.T) {
	_, base := newTestAgent(t)
	var open []*http.Response
	for range maxMonitors {
		resp := openMonitor(t, base+"/v1/agent/monitor", "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("monitor %d: %d, want 200", len(open)+1, resp.StatusCode)
		}
		open = append(open, resp)
	}
	code, body := send(t, http.MethodGet, base+"/v1/agent/monitor", "", "")
	if code != http.StatusTooManyRequests || !strings.Contains(body, "8 log streams already open") {
		t.Fatalf("monitor past the limit: %d %q, want 429 naming the limit", code, body)
	}
	open[0].Body.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp := openMonitor(t, base+"/v1/agent/monitor", "")
		if resp.StatusCode == http.StatusOK {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no monitor place freed 10s after one closed: %d", resp.StatusCode)
		}
	}
}

// TestDroppedNotice: the dropped-lines notice is a JSON line in a JSON
// stream, hclog's text otherwise.
func TestDroppedNotice(t *testing.T) {
	var v map[string]any
	if err := json.Unmarshal(droppedNotice(7, true), &v); err != nil || v["@level"] != "warn" || v["dropped"] != float64(7) {
		t.Errorf("JSON notice: %v (%v)", v, err)
	}
	if got := string(droppedNotice(7, false)); !strings.HasPrefix(got, "[WARN]  monitor: dropped 7 log lines") {
		t.Errorf("text notice: %q", got)
	}
}
