package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Environment variables read by DefaultConfig.
const (
	EnvAddress   = "DROVER_ADDR"
	EnvRegion    = "DROVER_REGION"
	EnvNamespace = "DROVER_NAMESPACE"
)

// DefaultAddress is the agent's HTTP address when none is configured.
const DefaultAddress = "http://127.0.0.1:4646"

// Config configures a Client.
type Config struct {
	// Address is the agent's HTTP address, "http://host:port" (a bare
	// "host:port" gets http://). Empty means $DROVER_ADDR, else
	// DefaultAddress.
	Address string
	// Region and Namespace are sent with every request that does not set
	// its own.
	Region    string
	Namespace string
	// HTTPClient is used for every request; nil means a client without a
	// timeout (blocking queries and log streams outlive any fixed one).
	HTTPClient *http.Client
	// WaitTime is the default wait of blocking queries (QueryOptions.WaitIndex
	// set without WaitTime); 0 leaves it to the server.
	WaitTime time.Duration
}

// DefaultConfig returns a Config filled from the environment.
func DefaultConfig() *Config {
	cfg := &Config{
		Address:   os.Getenv(EnvAddress),
		Region:    os.Getenv(EnvRegion),
		Namespace: os.Getenv(EnvNamespace),
	}
	if cfg.Address == "" {
		cfg.Address = DefaultAddress
	}
	return cfg
}

// Client talks to one Drover agent over HTTP. It is safe for concurrent use.
type Client struct {
	cfg  Config
	base *url.URL
	http *http.Client
}

// NewClient returns a client for cfg; a nil cfg means DefaultConfig().
func NewClient(cfg *Config) (*Client, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	c := *cfg
	if c.Address == "" {
		c.Address = DefaultConfig().Address
	}
	addr := c.Address
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", c.Address, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("address %q: scheme must be http or https", c.Address)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("address %q: missing host", c.Address)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{cfg: c, base: u, http: hc}, nil
}

// Address returns the agent address the client talks to.
func (c *Client) Address() string { return c.base.String() }

// QueryOptions are the options of a read.
type QueryOptions struct {
	Region     string
	Namespace  string
	AllowStale bool
	// WaitIndex makes the read block until the result's index is greater
	// than it, or WaitTime passes.
	WaitIndex uint64
	WaitTime  time.Duration
	// Prefix filters list results by ID prefix.
	Prefix string
	// Params are extra query parameters.
	Params map[string]string
}

// QueryMeta is what the agent says about a read.
type QueryMeta struct {
	// LastIndex is the index of the answer: pass it as WaitIndex to block
	// until something changes.
	LastIndex   uint64
	LastContact time.Duration
	KnownLeader bool
	RequestTime time.Duration
}

// WriteOptions are the options of a write.
type WriteOptions struct {
	Region    string
	Namespace string
}

// WriteMeta is what the agent says about a write.
type WriteMeta struct {
	LastIndex   uint64
	RequestTime time.Duration
}

// StatusError is a non-2xx answer: the status code and the agent's message.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("Unexpected response code: %d (%s)", e.Code, e.Body)
}

// StatusCode returns the HTTP status code carried by err, or 0 when err is
// not (and does not wrap) a *StatusError.
func StatusCode(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool { return StatusCode(err) == http.StatusNotFound }

// request is one HTTP call being built.
type request struct {
	method string
	path   string
	params url.Values
	body   any
}

func (c *Client) newRequest(method, path string) *request {
	r := &request{method: method, path: path, params: url.Values{}}
	if c.cfg.Region != "" {
		r.params.Set("region", c.cfg.Region)
	}
	if c.cfg.Namespace != "" {
		r.params.Set("namespace", c.cfg.Namespace)
	}
	return r
}

func (r *request) setQuery(q *QueryOptions, defaultWait time.Duration) {
	if q == nil {
		return
	}
	if q.Region != "" {
		r.params.Set("region", q.Region)
	}
	if q.Namespace != "" {
		r.params.Set("namespace", q.Namespace)
	}
	if q.AllowStale {
		r.params.Set("stale", "true")
	}
	if q.WaitIndex != 0 {
		r.params.Set("index", strconv.FormatUint(q.WaitIndex, 10))
	}
	wait := q.WaitTime
	if wait == 0 && q.WaitIndex != 0 {
		wait = defaultWait
	}
	if wait != 0 {
		r.params.Set("wait", fmt.Sprintf("%dms", wait.Milliseconds()))
	}
	if q.Prefix != "" {
		r.params.Set("prefix", q.Prefix)
	}
	for k, v := range q.Params {
		r.params.Set(k, v)
	}
}

func (r *request) setWrite(w *WriteOptions) {
	if w == nil {
		return
	}
	if w.Region != "" {
		r.params.Set("region", w.Region)
	}
	if w.Namespace != "" {
		r.params.Set("namespace", w.Namespace)
	}
}

// do sends r and returns the response when it is 2xx; otherwise the body
// is read into a *StatusError.
func (c *Client) do(ctx context.Context, r *request) (*http.Response, time.Duration, error) {
	// r.path has its IDs escaped already (pathID).
	target := c.base.String() + r.path
	if q := r.params.Encode(); q != "" {
		target += "?" + q
	}
	var body io.Reader
	contentType := "application/json"
	switch b := r.body.(type) {
	case nil:
	case io.Reader: // sent as it is (snapshot archives)
		body, contentType = b, "application/octet-stream"
	default:
		buf, err := json.Marshal(r.body)
		if err != nil {
			return nil, 0, fmt.Errorf("encode %s %s: %w", r.method, r.path, err)
		}
		body = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	rtt := time.Since(start)
	if err != nil {
		return nil, rtt, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, rtt, &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(msg))}
	}
	return resp, rtt, nil
}

// query GETs path into out and returns the read's metadata.
func (c *Client) query(ctx context.Context, path string, q *QueryOptions, out any) (*QueryMeta, error) {
	r := c.newRequest(http.MethodGet, path)
	r.setQuery(q, c.cfg.WaitTime)
	resp, rtt, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	meta, err := parseQueryMeta(resp.Header)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	meta.RequestTime = rtt
	if err := decodeBody(resp, out); err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return meta, nil
}

// write sends a body (may be nil) with method and decodes the answer into
// out (may be nil).
func (c *Client) write(ctx context.Context, method, path string, in, out any, w *WriteOptions, params url.Values) (*WriteMeta, error) {
	r := c.newRequest(method, path)
	r.setWrite(w)
	for k, vs := range params {
		r.params[k] = vs
	}
	r.body = in
	resp, rtt, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	meta := &WriteMeta{RequestTime: rtt}
	if v := resp.Header.Get("X-Nomad-Index"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s %s: X-Nomad-Index %q: %w", method, path, v, err)
		}
		meta.LastIndex = idx
	}
	if out != nil {
		if err := decodeBody(resp, out); err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return meta, nil
}

func decodeBody(resp *http.Response, out any) error {
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	dropNulls(out)
	return nil
}

// parseQueryMeta reads X-Nomad-Index, X-Nomad-LastContact (milliseconds)
// and X-Nomad-KnownLeader. Absent headers leave zero values; malformed
// ones are errors.
func parseQueryMeta(h http.Header) (*QueryMeta, error) {
	m := &QueryMeta{}
	if v := h.Get("X-Nomad-Index"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("X-Nomad-Index %q: %w", v, err)
		}
		m.LastIndex = idx
	}
	if v := h.Get("X-Nomad-LastContact"); v != "" {
		ms, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("X-Nomad-LastContact %q: %w", v, err)
		}
		m.LastContact = time.Duration(ms) * time.Millisecond
	}
	if v := h.Get("X-Nomad-KnownLeader"); v != "" {
		known, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("X-Nomad-KnownLeader %q: %w", v, err)
		}
		m.KnownLeader = known
	}
	return m, nil
}

// pathID escapes one ID for use as a path segment.
func pathID(id string) string { return url.PathEscape(id) }
