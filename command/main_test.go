package command

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/cli"
)

func TestMain(m *testing.M) {
	// Times in output and golden files are rendered in UTC.
	time.Local = time.UTC
	os.Exit(m.Run())
}

// run runs the CLI with args against addr (if set) and returns the exit
// code, stdout and stderr.
func run(t *testing.T, addr string, args ...string) (int, string, string) {
	t.Helper()
	ui := cli.NewMockUi()
	if addr != "" {
		t.Setenv("DROVER_ADDR", addr)
	}
	var raw strings.Builder
	code := Run(args, Meta{Ui: ui, Stdout: &raw})
	return code, ui.OutputWriter.String() + raw.String(), ui.ErrorWriter.String()
}

// fakeAgent answers "METHOD /path" with canned JSON (raw bytes for the
// file and log routes) and records requests.
type fakeAgent struct {
	mu       sync.Mutex
	routes   map[string]func(r *http.Request) (int, any)
	handlers map[string]http.Handler
	seen     []string
}

func newFakeAgent(t *testing.T) (*fakeAgent, string) {
	t.Helper()
	f := &fakeAgent{routes: map[string]func(*http.Request) (int, any){}, handlers: map[string]http.Handler{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	f.mu.Lock()
	f.seen = append(f.seen, key+"?"+r.URL.RawQuery)
	h, raw := f.routes[key], f.handlers[key]
	f.mu.Unlock()
	if raw != nil {
		raw.ServeHTTP(w, r)
		return
	}
	if h == nil {
		http.Error(w, "no such API: "+key, http.StatusNotFound)
		return
	}
	code, body := h(r)
	w.Header().Set("X-Nomad-Index", "10")
	w.Header().Set("X-Nomad-KnownLeader", "true")
	w.Header().Set("X-Nomad-LastContact", "0")
	if code != http.StatusOK {
		http.Error(w, fmt.Sprint(body), code)
		return
	}
	if s, ok := body.(string); ok && (strings.HasPrefix(key, "GET /v1/client/fs/logs/") || strings.HasPrefix(key, "GET /v1/client/fs/cat/")) {
		fmt.Fprint(w, s)
		return
	}
	_ = json.NewEncoder(w).Encode(body)
}

// on answers key with body.
func (f *fakeAgent) on(key string, body any) {
	f.onFunc(key, func(*http.Request) (int, any) { return http.StatusOK, body })
}

func (f *fakeAgent) onFunc(key string, h func(r *http.Request) (int, any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[key] = h
}

// onHandler serves key with h (a websocket, say).
func (f *fakeAgent) onHandler(key string, h http.Handler) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[key] = h
}

// runIO runs the CLI with stdin and returns the exit code, stdout and
// stderr, raw bytes included.
func runIO(t *testing.T, addr string, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	ui := cli.NewMockUi()
	var out, errOut strings.Builder
	t.Setenv("DROVER_ADDR", addr)
	code := Run(args, Meta{Ui: ui, Stdout: &out, Stderr: &errOut, Stdin: stdin})
	return code, ui.OutputWriter.String() + out.String(), ui.ErrorWriter.String() + errOut.String()
}

func (f *fakeAgent) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}
