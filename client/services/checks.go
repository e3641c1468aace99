package services

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// Check statuses, as Nomad's.
const (
	StatusPending  = "pending"
	StatusPassing  = "success"
	StatusWarning  = "warning"
	StatusCritical = "failure"
)

// maxCheckOutput bounds the output kept of one check run.
const maxCheckOutput = 4 << 10

// Execer runs a command inside a running task (the alloc runner's
// ExecTask): script checks.
type Execer interface {
	ExecTask(ctx context.Context, task string, opts *drivers.ExecOptions) (int, error)
}

// target is where a check connects: host:port.
type target struct {
	Address string
	Port    int
}

func (t target) hostPort() string { return net.JoinHostPort(t.Address, strconv.Itoa(t.Port)) }

// runCheck runs one check once within ctx (its timeout) and returns its
// status and a short output.
func runCheck(ctx context.Context, c *structs.ServiceCheck, at target, ex Execer, hc *http.Client) (string, string) {
	switch c.Type {
	case structs.ServiceCheckHTTP:
		return httpCheck(ctx, c, at, hc)
	case structs.ServiceCheckTCP:
		return tcpCheck(ctx, at)
	case structs.ServiceCheckScript:
		return scriptCheck(ctx, c, ex)
	}
	return StatusCritical, fmt.Sprintf("check type %q is not supported", c.Type)
}

// httpCheck is passing on a 2xx answer, warning on 429 (as Consul's and
// Nomad's), critical otherwise.
func httpCheck(ctx context.Context, c *structs.ServiceCheck, at target, hc *http.Client) (string, string) {
	if at.Port == 0 {
		return StatusCritical, "no port to check"
	}
	scheme := c.Protocol
	if scheme == "" {
		scheme = "http"
	}
	path := c.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	method := c.Method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if c.Body != "" {
		body = strings.NewReader(c.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, scheme+"://"+at.hostPort()+path, body)
	if err != nil {
		return StatusCritical, err.Error()
	}
	for k, vs := range c.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return StatusCritical, err.Error()
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(io.LimitReader(resp.Body, maxCheckOutput))
	out := fmt.Sprintf("HTTP %s %s: %s", method, req.URL, resp.Status)
	if len(got) > 0 {
		out += " Output: " + string(got)
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return StatusPassing, out
	case resp.StatusCode == http.StatusTooManyRequests:
		return StatusWarning, out
	}
	return StatusCritical, out
}

// tcpCheck is passing when a connection opens.
func tcpCheck(ctx context.Context, at target) (string, string) {
	if at.Port == 0 {
		return StatusCritical, "no port to check"
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", at.hostPort())
	if err != nil {
		return StatusCritical, err.Error()
	}
	_ = conn.Close()
	return StatusPassing, "TCP connect " + at.hostPort() + ": Success"
}

// scriptCheck runs the command in the check's task: exit 0 is passing,
// 1 warning, anything else (or not running) critical.
func scriptCheck(ctx context.Context, c *structs.ServiceCheck, ex Execer) (string, string) {
	if ex == nil {
		return StatusCritical, "no task to run the script in"
	}
	out := &limitedBuffer{max: maxCheckOutput}
	code, err := ex.ExecTask(ctx, c.TaskName, &drivers.ExecOptions{
		Command: append([]string{c.Command}, c.Args...), Stdout: out, Stderr: out,
	})
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return StatusCritical, "script timed out"
	case err != nil:
		return StatusCritical, err.Error()
	case code == 0:
		return StatusPassing, out.String()
	case code == 1:
		return StatusWarning, out.String()
	}
	return StatusCritical, fmt.Sprintf("exit code %d: %s", code, out.String())
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
