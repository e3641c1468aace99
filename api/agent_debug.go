package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// MonitorOptions choose what Agent.Monitor streams.
type MonitorOptions struct {
	// LogLevel is the lowest level streamed: trace, debug, info (the
	// default), warn or error.
	LogLevel string
	// JSON streams hclog's JSON lines instead of its text lines.
	JSON bool
	// NodeID or ServerID name the agent whose log is streamed; empty is
	// the agent the client talks to (the only one supported yet).
	NodeID, ServerID string
}

// Monitor streams the agent's log lines, from now until ctx ends, as
// text. A reader slower than the agent logs loses lines; the stream
// says how many in a line of its own. The caller closes the reader.
func (a *Agent) Monitor(ctx context.Context, o MonitorOptions) (io.ReadCloser, error) {
	r := a.c.newRequest(http.MethodGet, "/v1/agent/monitor")
	r.params.Set("plain", "true")
	if o.LogLevel != "" {
		r.params.Set("log_level", o.LogLevel)
	}
	if o.JSON {
		r.params.Set("log_json", "true")
	}
	if o.NodeID != "" {
		r.params.Set("node_id", o.NodeID)
	}
	if o.ServerID != "" {
		r.params.Set("server_id", o.ServerID)
	}
	resp, _, err := a.c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Pprof returns one of the agent's Go profiles ("goroutine", "heap",
// "allocs", "threadcreate", "block", "mutex", or "profile" for the CPU
// for seconds); debug > 0 asks for pprof's text form. It needs
// enable_debug on the agent, or with ACLs a token with agent write.
func (a *Agent) Pprof(ctx context.Context, profile string, seconds, debug int) ([]byte, error) {
	r := a.c.newRequest(http.MethodGet, "/v1/agent/pprof/"+url.PathEscape(profile))
	if seconds > 0 {
		r.params.Set("seconds", strconv.Itoa(seconds))
	}
	if debug > 0 {
		r.params.Set("debug", strconv.Itoa(debug))
	}
	return a.c.readAll(ctx, r)
}

// Metrics returns the agent's metrics: Nomad's JSON summary, or with
// prometheus the Prometheus text format, as the agent wrote them.
func (a *Agent) Metrics(ctx context.Context, prometheus bool) ([]byte, error) {
	r := a.c.newRequest(http.MethodGet, "/v1/metrics")
	if prometheus {
		r.params.Set("format", "prometheus")
	}
	return a.c.readAll(ctx, r)
}

// Raw GETs an API path and returns its body as the agent wrote it (a
// JSON answer stays untouched, for archives of what an agent said).
func (c *Client) Raw(ctx context.Context, path string, params url.Values) (json.RawMessage, error) {
	r := c.newRequest(http.MethodGet, path)
	for k, vs := range params {
		r.params[k] = vs
	}
	return c.readAll(ctx, r)
}

func (c *Client) readAll(ctx context.Context, r *request) ([]byte, error) {
	resp, _, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.path, err)
	}
	return b, nil
}
