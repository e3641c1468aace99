package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
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

// Environment variables read by DefaultConfig. Each has a NOMAD_
// counterpart (NOMAD_ADDR, NOMAD_CACERT...) read when it is unset, so
// Nomad's settings work as they are; DROVER_ wins.
const (
	EnvAddress       = "DROVER_ADDR"
	EnvRegion        = "DROVER_REGION"
	EnvNamespace     = "DROVER_NAMESPACE"
	EnvCACert        = "DROVER_CACERT"
	EnvClientCert    = "DROVER_CLIENT_CERT"
	EnvClientKey     = "DROVER_CLIENT_KEY"
	EnvTLSServerName = "DROVER_TLS_SERVER_NAME"
	EnvSkipVerify    = "DROVER_SKIP_VERIFY"
	EnvToken         = "DROVER_TOKEN"
)

// TokenHeader carries the ACL token (Config.SecretID) on every request.
const TokenHeader = "X-Nomad-Token"

// DefaultAddress is the agent's HTTP address when none is configured.
const DefaultAddress = "http://127.0.0.1:4646"

// Config configures a Client.
type Config struct {
	// Address is the agent's HTTP address, "http://host:port" or
	// "https://host:port" (a bare "host:port" gets http://). Empty means
	// $DROVER_ADDR, else DefaultAddress.
	Address string
	// Region and Namespace are sent with every request that does not set
	// its own.
	Region    string
	Namespace string
	// SecretID is the ACL token, sent as X-Nomad-Token on every request
	// (exec's websocket and log streams too).
	SecretID string
	// TLSConfig sets up HTTPS: the CA to verify the agent with and the
	// certificate to present. It applies when HTTPClient is nil.
	TLSConfig *TLSConfig
	// HTTPClient is used for every request; nil means a client without a
	// timeout (blocking queries and log streams outlive any fixed one).
	HTTPClient *http.Client
	// WaitTime is the default wait of blocking queries (QueryOptions.WaitIndex
	// set without WaitTime); 0 leaves it to the server.
	WaitTime time.Duration
}

// TLSConfig is the client side of HTTPS, Nomad's fields: PEM file paths
// of the CA (CACert) and of the client certificate and key, the name
// the agent's certificate must carry (TLSServerName; default: the
// address's host), and Insecure to skip verifying the agent.
type TLSConfig struct {
	CACert        string
	ClientCert    string
	ClientKey     string
	TLSServerName string
	Insecure      bool
}

// DefaultConfig returns a Config filled from the environment.
func DefaultConfig() *Config {
	cfg := &Config{
		Address:   env(EnvAddress),
		Region:    env(EnvRegion),
		Namespace: env(EnvNamespace),
		SecretID:  env(EnvToken),
		TLSConfig: &TLSConfig{
			CACert:        env(EnvCACert),
			ClientCert:    env(EnvClientCert),
			ClientKey:     env(EnvClientKey),
			TLSServerName: env(EnvTLSServerName),
		},
	}
	if v, err := strconv.ParseBool(env(EnvSkipVerify)); err == nil {
		cfg.TLSConfig.Insecure = v
	}
	if cfg.Address == "" {
		cfg.Address = DefaultAddress
	}
	return cfg
}

// env reads a DROVER_ variable, else its NOMAD_ counterpart.
func env(name string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return os.Getenv("NOMAD_" + strings.TrimPrefix(name, "DROVER_"))
}

// tlsClientConfig builds the crypto/tls config of t; nil when t sets
// nothing.
func (t *TLSConfig) tlsClientConfig() (*tls.Config, error) {
	if t == nil || *t == (TLSConfig{}) {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.TLSServerName, InsecureSkipVerify: t.Insecure}
	if t.CACert != "" {
		buf, err := os.ReadFile(t.CACert)
		if err != nil {
			return nil, fmt.Errorf("CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(buf) {
			return nil, fmt.Errorf("CA certificate %s: no PEM certificate in it", t.CACert)
		}
		conf.RootCAs = pool
	}
	switch {
	case t.ClientCert != "" && t.ClientKey != "":
		pair, err := tls.LoadX509KeyPair(t.ClientCert, t.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s, key %s: %w", t.ClientCert, t.ClientKey, err)
		}
		conf.Certificates = []tls.Certificate{pair}
	case t.ClientCert != "" || t.ClientKey != "":
		return nil, errors.New("client certificate and client key go together: give both")
	}
	return conf, nil
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
		tlsConf, err := c.TLSConfig.tlsClientConfig()
		if err != nil {
			return nil, err
		}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = tlsConf
		hc = &http.Client{Transport: t, CheckRedirect: keepTokenOnHost}
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
	c.setToken(req.Header)
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

// setToken sets the ACL token header, when there is a token.
func (c *Client) setToken(h http.Header) {
	if c.cfg.SecretID != "" {
		h.Set(TokenHeader, c.cfg.SecretID)
	}
}

// pathID escapes one ID for use as a path segment.
func pathID(id string) string { return url.PathEscape(id) }

// keepTokenOnHost follows redirects, dropping the ACL token when one
// leads to another host (Go drops only Authorization and cookies).
func keepTokenOnHost(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if req.URL.Host != via[0].URL.Host {
		req.Header.Del(TokenHeader)
	}
	return nil
}
