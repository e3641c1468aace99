package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/audit"
	"github.com/droverhq/drover/structs"
	"github.com/droverhq/drover/telemetry"
	"github.com/droverhq/drover/ui"
	"github.com/hashicorp/go-hclog"
)

// Blocking query limits.
const (
	defaultQueryWait = 5 * time.Minute
	maxQueryWait     = 5 * time.Minute // the servers' cap (server.maxQueryTime)
)

// backend is what the HTTP API needs from the agent: server endpoints
// (in process on a server agent, through the servers from a client-only
// one) and streaming client operations routed to the node that runs an
// allocation. Handlers decode, call, encode; they read no state.
type backend interface {
	RPC(ctx context.Context, method string, args, reply any) error
	StreamCall(ctx context.Context, method, token string, args any) (net.Conn, error)
	// LocalNodeID is this agent's client's node ID, "" without a client.
	LocalNodeID() string
	Self() map[string]any
}

// httpAPI serves Drover's /v1 HTTP API.
type httpAPI struct {
	b      backend
	logger hclog.Logger
	mux    *routeMux
	acls   agentACLs
	// audit, when set, gets a line per write or denied request.
	audit *audit.Log
	// aclEnabled: the agent's acl block is on, so its own endpoints ask
	// the servers what a token may do.
	aclEnabled bool
	// limits bound request bodies and jobs (the limits block; zero
	// fields are the defaults).
	limits structs.Limits
	// telemetry answers /v1/metrics (http_metrics.go); nil answers 501.
	telemetry *telemetry.Telemetry
	// logSinks feeds /v1/agent/monitor (http_monitor.go); nil answers
	// 501. monitorLines bounds each monitor's buffer (0: monitorBuffer).
	logSinks     logSinks
	monitorLines int
	// monitors counts the open /v1/agent/monitor streams: each formats
	// every log line, so at most maxMonitors run at once.
	monitors atomic.Int32
	// enableDebug serves /v1/agent/pprof without ACLs (http_pprof.go).
	enableDebug bool
}

// routeMux is the API's mux, keeping the patterns it serves (the route
// test walks them).
type routeMux struct {
	*http.ServeMux
	patterns []string
}

func (m *routeMux) HandleFunc(pattern string, fn func(http.ResponseWriter, *http.Request)) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.HandleFunc(pattern, fn)
}

func (m *routeMux) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

// codedError is an error with an HTTP status.
type codedError struct {
	code int
	msg  string
}

func (e *codedError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) error {
	return &codedError{code: code, msg: fmt.Sprintf(format, args...)}
}

func newHTTPAPI(b backend, logger hclog.Logger) *httpAPI {
	h := &httpAPI{b: b, logger: logger, mux: &routeMux{ServeMux: http.NewServeMux()}}
	h.routes()
	return h
}

// ServeHTTP refuses a browser's cross-site write (a request that is not
// a GET or HEAD whose Origin names another host than the one asked):
// until ACLs exist (and with them, for cookies' sake), a page the user
// visits must not stop, restart or signal their tasks through a local
// agent. Tools (curl, the CLI, Nomad's client) send no Origin.
//
// A browser's write whose content type a cross-site form may send
// (text/plain, form encodings) must carry a token header, which such a
// form cannot; tools (curl's default is a form type) are not browsers.
// With ACLs off, a browser may change state (or exec) only at an IP
// address or localhost: a page of a name rebound to the agent's address
// is same-origin by every header, and nothing else would stop it.
// Every answer carries headers that keep browsers from sniffing it or
// framing the UI.
func (h *httpAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Referrer-Policy", "no-referrer")
	rec := &statusRecorder{ResponseWriter: w}
	defer func() { h.auditRequest(r, rec.status) }()
	write := r.Method != http.MethodGet && r.Method != http.MethodHead
	acts := write || isExec(r)
	switch {
	case write && crossOrigin(r):
		h.writeError(rec, r, errorf(http.StatusForbidden, "%s %s: cross-origin request from %s refused", r.Method, r.URL.Path, r.Header.Get("Origin")))
		return
	case write && fromBrowser(r) && simpleContentType(r.Header.Get("Content-Type")) && requestToken(r) == "":
		h.writeError(rec, r, errorf(http.StatusForbidden, "%s %s: a browser's write of type %q must carry an X-Nomad-Token header or be sent as application/json",
			r.Method, r.URL.Path, r.Header.Get("Content-Type")))
		return
	case acts && fromBrowser(r) && !h.aclEnabled && !addressHost(r.Host):
		h.writeError(rec, r, errorf(http.StatusForbidden, "%s %s: with ACLs off a browser may change state only at an IP address or localhost, not %q (enable ACLs to use a name)",
			r.Method, r.URL.Path, r.Host))
		return
	}
	h.mux.ServeHTTP(rec, r)
}

// fromBrowser reports whether a request carries what browsers send and
// tools do not: an Origin, or Fetch metadata.
func fromBrowser(r *http.Request) bool {
	return r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != "" || r.Header.Get("Sec-Fetch-Mode") != ""
}

// isExec reports whether the request opens an exec session.
func isExec(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/client/allocation/") && strings.HasSuffix(r.URL.Path, "/exec")
}

// addressHost reports whether host (of a Host header) is an IP address
// or localhost, which no other site's page can be served from.
func addressHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	return net.ParseIP(host) != nil || strings.EqualFold(host, "localhost")
}

// crossOrigin reports whether the request's Origin names another host
// than the one it was sent to, or its Fetch metadata says it came from
// another site.
func crossOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host)
}

func (h *httpAPI) routes() {
	m := h.mux
	m.HandleFunc("GET /v1/jobs", h.wrap(h.jobsList))
	m.HandleFunc("PUT /v1/jobs", h.wrap(h.jobsRegister))
	m.HandleFunc("POST /v1/jobs", h.wrap(h.jobsRegister))
	m.HandleFunc("PUT /v1/jobs/parse", h.wrap(h.jobsParse))
	m.HandleFunc("POST /v1/jobs/parse", h.wrap(h.jobsParse))
	m.HandleFunc("GET /v1/job/{id}", h.wrap(h.jobRead))
	m.HandleFunc("PUT /v1/job/{id}", h.wrap(h.jobsRegister))
	m.HandleFunc("POST /v1/job/{id}", h.wrap(h.jobsRegister))
	m.HandleFunc("DELETE /v1/job/{id}", h.wrap(h.jobDeregister))
	m.HandleFunc("GET /v1/job/{id}/allocations", h.wrap(h.jobAllocs))
	m.HandleFunc("GET /v1/job/{id}/evaluations", h.wrap(h.jobEvals))
	m.HandleFunc("GET /v1/job/{id}/summary", h.wrap(h.jobSummary))
	m.HandleFunc("PUT /v1/job/{id}/scale", h.wrap(h.jobScale))
	m.HandleFunc("POST /v1/job/{id}/scale", h.wrap(h.jobScale))
	m.HandleFunc("PUT /v1/job/{id}/plan", h.wrap(h.jobPlan))
	m.HandleFunc("POST /v1/job/{id}/plan", h.wrap(h.jobPlan))
	m.HandleFunc("PUT /v1/job/{id}/dispatch", h.wrap(h.jobDispatch)) // http_periodic.go
	m.HandleFunc("POST /v1/job/{id}/dispatch", h.wrap(h.jobDispatch))
	m.HandleFunc("PUT /v1/job/{id}/periodic/force", h.wrap(h.periodicForce))
	m.HandleFunc("POST /v1/job/{id}/periodic/force", h.wrap(h.periodicForce))
	h.routeDeploy(m)          // http_job_versions.go
	h.routeNodeEligibility(m) // http_node_eligibility.go
	h.routeJobValidate(m)     // http_job_validate.go
	h.routeJobScaleStatus(m)  // http_job_scale_status.go
	h.routeAgentHealth(m)     // http_agent_health.go
	h.routeServicesBy(m)      // http_services_by.go
	m.HandleFunc("GET /v1/gpus", h.wrap(h.gpus))

	m.HandleFunc("GET /v1/allocations", h.wrap(h.allocsList))
	m.HandleFunc("GET /v1/allocation/{id}", h.wrap(h.allocRead))
	m.HandleFunc("GET /v1/evaluations", h.wrap(h.evalsList))
	m.HandleFunc("GET /v1/evaluation/{id}", h.wrap(h.evalRead))
	m.HandleFunc("GET /v1/evaluation/{id}/allocations", h.wrap(h.evalAllocs))
	m.HandleFunc("GET /v1/nodes", h.wrap(h.nodesList))
	m.HandleFunc("GET /v1/node/{id}", h.wrap(h.nodeRead))
	m.HandleFunc("GET /v1/node/{id}/allocations", h.wrap(h.nodeAllocs))

	m.HandleFunc("GET /v1/status/leader", h.wrap(h.statusLeader))
	m.HandleFunc("GET /v1/status/peers", h.wrap(h.statusPeers))
	m.HandleFunc("GET /v1/agent/self", h.wrap(h.agentSelf))
	m.HandleFunc("GET /v1/agent/servers", h.wrap(h.agentServers))
	m.HandleFunc("GET /v1/regions", h.wrap(h.regions))
	m.HandleFunc("/v1/", h.unknownRoute)
	h.clientOpsRoutes(m)
	h.operatorRoutes(m)
	h.namespaceRoutes(m)
	h.queueRoutes(m)
	h.serviceRoutes(m) // http_services.go
	h.varRoutes(m)     // http_vars.go
	h.rootKeyringRoutes(m)
	h.clusterRoutes(m)
	h.snapshotRoutes(m)
	h.aclRoutes(m)
	h.keyringRoutes(m)
	h.systemRoutes(m)
	h.scalingRoutes(m) // http_scaling.go
	h.metricsRoutes(m)
	h.eventRoutes(m)  // http_events.go
	h.searchRoutes(m) // http_search.go
	h.monitorRoutes(m)
	h.pprofRoutes(m)

	// The web UI, and / and /ui redirecting to it.
	web := ui.Handler()
	m.Handle("GET /ui/", web)
	m.Handle("GET /ui", web)
	m.Handle("GET /{$}", web)
}

// unknownRoute answers 405 when the path exists for other methods, else
// 404, with a message either way.
func (h *httpAPI) unknownRoute(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := h.mux.Handler(probe); pattern != "/v1/" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		h.writeError(w, r, errorf(http.StatusMethodNotAllowed, "%s %s: method not allowed (allowed: %s)", r.Method, r.URL.Path, strings.Join(allowed, ", ")))
		return
	}
	h.writeError(w, r, errorf(http.StatusNotFound, "no such API: %s %s", r.Method, r.URL.Path))
}

// handlerFunc answers a request with a value to encode as JSON.
type handlerFunc func(w http.ResponseWriter, r *http.Request) (any, error)

func (h *httpAPI) wrap(fn handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		defer h.recoverPanic(w, r)
		out, err := fn(w, r)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		if _, pretty := r.URL.Query()["pretty"]; pretty {
			enc.SetIndent("", "    ")
		}
		if err := enc.Encode(out); err != nil {
			h.logger.Debug("http: write response", "path", r.URL.Path, "error", err)
		}
		h.logger.Trace("http: request", "method", r.Method, "path", r.URL.Path, "duration", time.Since(start))
	}
}

// recoverPanic is the last line against input no check foresaw: a
// panicking handler logs its stack and answers 500 instead of taking the
// connection (or, for a handler goroutine of its own, the agent) down.
func (h *httpAPI) recoverPanic(w http.ResponseWriter, r *http.Request) {
	if p := recover(); p != nil {
		if p == http.ErrAbortHandler {
			panic(p)
		}
		h.logger.Error("http: handler panicked", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
		h.writeError(w, r, errorf(http.StatusInternalServerError, "%s %s: internal error", r.Method, r.URL.Path))
	}
}

// writeError answers err as a one-line plain-text message with the
// status of its code (structs.ErrCode.HTTPStatus), the one place where
// errors become statuses.
func (h *httpAPI) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := structs.CodeOf(err).HTTPStatus()
	var ce *codedError
	switch {
	case errors.As(err, &ce):
		code = ce.code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		code = http.StatusServiceUnavailable
	}
	if code >= 500 {
		h.logger.Error("http: request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, strings.ReplaceAll(err.Error(), "\n", " "))
}

// queryOptions parses ?index, ?wait, ?prefix, ?namespace, ?stale.
func parseQuery(r *http.Request) (structs.QueryOptions, error) {
	q := r.URL.Query()
	var o structs.QueryOptions
	if v := q.Get("index"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return o, errorf(http.StatusBadRequest, "index %q: not a number", v)
		}
		o.MinQueryIndex = idx
	}
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return o, errorf(http.StatusBadRequest, "wait %q: %v", v, err)
		}
		o.MaxQueryTime = d
	}
	if o.MaxQueryTime <= 0 {
		o.MaxQueryTime = defaultQueryWait
	}
	o.MaxQueryTime = min(o.MaxQueryTime, maxQueryWait)
	o.Prefix = q.Get("prefix")
	o.Namespace = q.Get("namespace")
	if o.Namespace == "" {
		o.Namespace = structs.DefaultNamespace
	}
	_, o.AllowStale = q["stale"]
	o.Region = q.Get("region")
	return o, nil
}

// setMeta sets the X-Nomad-* headers of a read from the endpoint's
// answer.
func setMeta(w http.ResponseWriter, m structs.QueryMeta) {
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(max(m.Index, 1), 10))
	w.Header().Set("X-Nomad-KnownLeader", strconv.FormatBool(m.KnownLeader))
	w.Header().Set("X-Nomad-LastContact", strconv.FormatInt(m.LastContact.Milliseconds(), 10))
}

// setIndex sets X-Nomad-Index of a write.
func setIndex(w http.ResponseWriter, index uint64) {
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(max(index, 1), 10))
}

// requestToken returns the request's ACL token: X-Nomad-Token, else an
// "Authorization: Bearer" header, else "" (anonymous).
func requestToken(r *http.Request) string {
	if t := r.Header.Get("X-Nomad-Token"); t != "" {
		return strings.TrimSpace(t)
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		if scheme, t, ok := strings.Cut(auth, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(t)
		}
	}
	return ""
}

// rpc calls a server endpoint for the request, with its token: every
// handler's one road to the servers.
func (h *httpAPI) rpc(r *http.Request, method string, args, reply any) error {
	if a, ok := args.(structs.AuthTokenSetter); ok {
		a.SetAuthToken(requestToken(r))
	}
	return h.b.RPC(r.Context(), method, args, reply)
}

// stream starts a client operation for the request, with its token.
func (h *httpAPI) stream(r *http.Request, method string, args any) (net.Conn, error) {
	return h.b.StreamCall(r.Context(), method, requestToken(r), args)
}

// read calls a read endpoint and sets the headers from its answer's
// meta. args carries the request's query options (parseQuery).
func (h *httpAPI) read(w http.ResponseWriter, r *http.Request, method string, args, reply any, meta *structs.QueryMeta) error {
	if err := h.rpc(r, method, args, reply); err != nil {
		return err
	}
	setMeta(w, *meta)
	return nil
}

// write calls a write endpoint and sets X-Nomad-Index from its answer.
func (h *httpAPI) write(w http.ResponseWriter, r *http.Request, method string, args, reply any, index *uint64) error {
	if err := h.rpc(r, method, args, reply); err != nil {
		return err
	}
	setIndex(w, *index)
	return nil
}

// orEmpty returns s, or an empty slice for nil, so lists encode as [].
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// decodeBody decodes a JSON request body into out, with a 400 on error:
// a body over limits.http_max_body, nested deeper than
// limits.json_max_depth, or not JSON.
func (h *httpAPI) decodeBody(r *http.Request, out any) error {
	src, err := h.readBody(r)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(src, out); err != nil {
		return errorf(http.StatusBadRequest, "request body is not valid JSON: %v", err)
	}
	return nil
}

// readBody reads a JSON request body within limits.http_max_body and
// limits.json_max_depth, with a 400 or 413 past them.
func (h *httpAPI) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, errorf(http.StatusBadRequest, "missing request body")
	}
	l := h.limits.WithDefaults()
	src, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, l.HTTPMaxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, errorf(http.StatusRequestEntityTooLarge, "request body over the limit %d bytes (limits.http_max_body)", l.HTTPMaxBody)
	}
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "read request body: %v", err)
	}
	if d := structs.JSONDepth(src, l.JSONMaxDepth+1); d > l.JSONMaxDepth {
		return nil, errorf(http.StatusBadRequest, "request body nests deeper than the limit %d (limits.json_max_depth)", l.JSONMaxDepth)
	}
	return src, nil
}

// bodyIDMatches refuses a request whose body names an object (what: "job
// ID") other than the one in its path; an empty body ID means the path's.
func bodyIDMatches(what, body, path string) error {
	if body != "" && body != path {
		return errorf(http.StatusBadRequest, "%s %q in the body does not match %q in the path", what, body, path)
	}
	return nil
}
