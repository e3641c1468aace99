package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"

	"github.com/droverhq/drover/structs"
	"github.com/droverhq/drover/tlsconf"
)

// dialTimeout bounds connecting to one server.
const dialTimeout = 5 * time.Second

// rpcPool is the client's connection to the servers: one net/rpc
// connection at a time (calls are multiplexed on it), to the first server
// in the list that answers. Any server serves any call: a follower
// forwards it to the leader. A transport error drops the connection and
// the call moves on to the next server (every client call is safe to
// send twice); errors the server returned are passed through and keep
// the connection, except "not the leader" and "no cluster leader" (a
// server cut off from the others, or one that lost its leadership under
// the call), which also send the call on to the next server. A server
// that does not answer within the pool's timeout counts as broken: a
// wedged server or a connection that died silently must not hold
// heartbeats until TCP gives up.
type rpcPool struct {
	logger hclog.Logger
	// timeout bounds waiting for one answer; a server that does not
	// answer in time is dropped like a broken one. 0 waits forever.
	timeout time.Duration

	// dial connects to one server (dialServer; tests replace it).
	dial func(ctx context.Context, addr string) (*serverConn, error)
	// tls, when set, makes dialServer's connections mutual TLS.
	tls *tlsconf.Configurator
	// onStream serves a stream a server opened on the connection (a
	// client operation); nil refuses them.
	onStream func(stream net.Conn)
	// streams tracks the accept loops and onStream calls; close waits.
	streams sync.WaitGroup

	mu      sync.Mutex
	servers []string
	next    int // index of the server to try first
	conn    *serverConn
	addr    string
	closed  bool
	// dialing is closed when the dial in progress ends (nil: none). The
	// dial runs without mu, so a caller whose context ends, a heartbeat
	// with its own deadline or close need not wait for servers that do
	// not answer.
	dialing chan struct{}
}

func newRPCPool(servers []string, timeout time.Duration, logger hclog.Logger) *rpcPool {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	p := &rpcPool{servers: slices.Clone(servers), timeout: timeout, logger: logger}
	p.dial = p.dialServer
	return p
}

// serverConn is the client's connection to one server: a yamux session
// (structs.RPCTypeNodeMultiplex) whose first stream carries the client's
// net/rpc calls, and on which the server opens streams of its own for
// client operations (logs, exec, stats...), so that a client behind NAT
// is reachable through the connection it made.
type serverConn struct {
	rpc  *rpc.Client
	sess *yamux.Session // nil for a plain net/rpc connection (tests)
}

func (c *serverConn) Close() error {
	err := c.rpc.Close()
	if c.sess != nil {
		_ = c.sess.Close()
	}
	return err
}

// addServers appends servers not yet known, after the configured ones.
func (p *rpcPool) addServers(addrs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range addrs {
		if a != "" && !slices.Contains(p.servers, a) {
			p.servers = append(p.servers, a)
		}
	}
}

// call invokes method on a server. If ctx ends first it returns ctx's
// error; the reply must then be discarded, as after any error.
func (p *rpcPool) call(ctx context.Context, method string, args, reply any) error {
	return p.callWithin(ctx, p.timeout, method, args, reply)
}

// callBlocking is call for a blocking query that the server may hold for
// up to wait before it answers.
func (p *rpcPool) callBlocking(ctx context.Context, wait time.Duration, method string, args, reply any) error {
	timeout := p.timeout
	if timeout > 0 {
		timeout += wait
	}
	return p.callWithin(ctx, timeout, method, args, reply)
}

// callWithin is call with its own timeout. A call that fails on one
// server for a reason another server may not share (see rpcPool) moves
// on to the next server, trying each once.
func (p *rpcPool) callWithin(ctx context.Context, timeout time.Duration, method string, args, reply any) error {
	p.mu.Lock()
	tries := max(len(p.servers), 1)
	p.mu.Unlock()
	for {
		err := p.callOnce(ctx, timeout, method, args, reply)
		tries--
		if err == nil || tries == 0 || ctx.Err() != nil || !tryNextServer(err) {
			return err
		}
		p.logger.Debug("trying the next server", "method", method, "error", err)
	}
}

// callUser is a call the agent's HTTP API makes on the client's
// connection for a user (on a client-only agent). The servers already
// forward it to the leader and wait out elections, so unlike the
// client's own calls it is not sent to another server after a failure
// (a write that may have applied must not apply twice), except a read
// whose connection broke, once. Nor does its failure drop the
// connection, which carries the node's own calls and client operations,
// unless the connection itself failed.
func (p *rpcPool) callUser(ctx context.Context, timeout time.Duration, method string, args, reply any) error {
	read := false
	if info, ok := args.(structs.RPCInfo); ok {
		read = info.IsRead()
	}
	for attempt := 0; ; attempt++ {
		c, err := p.client(ctx)
		if err != nil {
			return err
		}
		err = p.callUserOnce(ctx, c, timeout, method, args, reply)
		broken := err != nil && !structs.IsRemote(err) && ctx.Err() == nil && !errors.Is(err, structs.ErrUnavailable)
		if broken {
			p.drop(c, err)
		}
		if !broken || !read || attempt > 0 {
			return err
		}
	}
}

func (p *rpcPool) callUserOnce(ctx context.Context, c *serverConn, timeout time.Duration, method string, args, reply any) error {
	_, err := awaitCall(ctx, c, timeout, method, args, reply)
	if errors.Is(err, errCallTimeout) {
		return fmt.Errorf("%w: %w", err, structs.ErrUnavailable)
	}
	return err
}

// errCallTimeout marks a call its server did not answer in time.
var errCallTimeout = errors.New("no answer in time")

// awaitCall sends a call on c and waits for its answer (its error
// decoded, structs.DecodeRPCError), for ctx, or for timeout (0: none).
// After a timeout the call is still in flight: it returns it with an
// error wrapping errCallTimeout.
func awaitCall(ctx context.Context, c *serverConn, timeout time.Duration, method string, args, reply any) (*rpc.Call, error) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	call := c.rpc.Go(method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
	case <-ctx.Done():
		return call, ctx.Err()
	case <-expired:
		return call, fmt.Errorf("%s: %w (%v)", method, errCallTimeout, timeout)
	}
	if err := structs.DecodeRPCError(call.Error); err != nil {
		return call, fmt.Errorf("%s: %w", method, err)
	}
	return call, nil
}

// callDrainTimeout bounds how long a call that timed out waits for its
// dropped connection to end it.
const callDrainTimeout = 5 * time.Second

// errNoServer is a call that reached no server at all: every one was
// dialed, so there is no next one to try.
var errNoServer = errors.New("no server reachable")

// tryNextServer reports whether a call that failed with err may succeed
// on another server: the server is not the leader or knows none, or the
// connection failed.
func tryNextServer(err error) bool {
	switch {
	case errors.Is(err, errNoServer), !structs.IsRemote(err) && errors.Is(err, structs.ErrShuttingDown):
		return false
	case structs.IsRemote(err):
		return isLeaderless(err)
	}
	return true
}

// isLeaderless reports whether err is a server's "not the leader" or "no
// cluster leader" answer.
func isLeaderless(err error) bool {
	return structs.IsRemote(err) && (errors.Is(err, structs.ErrNotLeader) || errors.Is(err, structs.ErrNoLeader))
}

func (p *rpcPool) callOnce(ctx context.Context, timeout time.Duration, method string, args, reply any) error {
	c, err := p.client(ctx)
	if err != nil {
		return err
	}
	call, err := awaitCall(ctx, c, timeout, method, args, reply)
	switch {
	case errors.Is(err, errCallTimeout):
		p.drop(c, err)
		// Closing the connection ends the call; wait for that, so that a
		// late answer is not decoded into reply while the next server's
		// attempt fills it.
		select {
		case <-call.Done:
		case <-time.After(callDrainTimeout):
		}
		return err
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return err
	}
	if err != nil {
		if !structs.IsRemote(err) || isLeaderless(err) {
			p.drop(c, err)
		}
		return err
	}
	return nil
}

// client returns the current connection, dialing the servers in order
// when there is none. One caller dials at a time, outside the lock; the
// others wait for its connection (or dial again if it found none) until
// their context ends.
func (p *rpcPool) client(ctx context.Context) (*serverConn, error) {
	for {
		p.mu.Lock()
		switch {
		case p.closed:
			p.mu.Unlock()
			return nil, structs.ErrShuttingDown
		case p.conn != nil:
			c := p.conn
			p.mu.Unlock()
			return c, nil
		case len(p.servers) == 0:
			p.mu.Unlock()
			return nil, errors.New("no servers configured")
		case p.dialing != nil:
			wait := p.dialing
			p.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		p.dialing = done
		servers, first := slices.Clone(p.servers), p.next
		p.mu.Unlock()

		c, idx, err := p.dialFirst(ctx, servers, first)

		p.mu.Lock()
		p.dialing = nil
		close(done)
		if err == nil && p.closed {
			c.Close()
			err = structs.ErrShuttingDown
		}
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		p.conn, p.addr, p.next = c, servers[idx], idx
		p.mu.Unlock()
		p.logger.Debug("connected to server", "addr", servers[idx])
		return c, nil
	}
}

// dialFirst dials servers from index first on, wrapping around, and
// returns the first connection made and its server's index.
func (p *rpcPool) dialFirst(ctx context.Context, servers []string, first int) (*serverConn, int, error) {
	var errs []error
	for i := range servers {
		idx := (first + i) % len(servers)
		c, err := p.dial(ctx, servers[idx])
		if err == nil {
			return c, idx, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, 0, fmt.Errorf("%w: %w", errNoServer, errors.Join(errs...))
}

// drop forgets a broken connection; the next call tries the next server.
func (p *rpcPool) drop(c *serverConn, cause error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != c {
		return
	}
	p.logger.Debug("dropping server connection", "addr", p.addr, "error", cause)
	c.Close()
	p.conn, p.addr = nil, ""
	if len(p.servers) > 0 {
		p.next = (p.next + 1) % len(p.servers)
	}
}

// close ends the connection; calls in flight fail and later ones are
// refused. It waits for the streams servers opened to end.
func (p *rpcPool) close() {
	p.mu.Lock()
	p.closed = true
	if p.conn != nil {
		p.conn.Close()
		p.conn = nil
	}
	p.mu.Unlock()
	p.streams.Wait()
}

// openStream opens a streaming call's stream to the current server
// (dialing one if there is none): its type byte is written.
func (p *rpcPool) openStream(ctx context.Context) (net.Conn, error) {
	c, err := p.client(ctx)
	if err != nil {
		return nil, err
	}
	if c.sess == nil {
		return nil, fmt.Errorf("connection to the server carries no streams: %w", structs.ErrInvalid)
	}
	stream, err := c.sess.OpenStream()
	if err != nil {
		p.drop(c, err)
		return nil, fmt.Errorf("open stream: %w", err)
	}
	if _, err := stream.Write([]byte{structs.StreamTypeStreaming}); err != nil {
		stream.Close()
		return nil, fmt.Errorf("open stream: %w", err)
	}
	return stream, nil
}

// dialServer connects to a server: a yamux session, its first stream
// for net/rpc calls, and a loop serving the streams the server opens.
func (p *rpcPool) dialServer(ctx context.Context, addr string) (*serverConn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if p.tls != nil {
		if conn, err = p.upgradeTLS(ctx, conn); err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
	}
	if _, err := conn.Write([]byte{structs.RPCTypeNodeMultiplex}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = nil
	cfg.Logger = p.logger.Named("yamux").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	cfg.KeepAliveInterval = sessionKeepAlive
	cfg.ConnectionWriteTimeout = sessionWriteTimeout
	sess, err := yamux.Client(conn, cfg)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	stream, err := sess.OpenStream()
	if err == nil {
		_, err = stream.Write([]byte{structs.StreamTypeRPC})
	}
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	p.streams.Add(1)
	go p.acceptStreams(sess)
	return &serverConn{rpc: rpc.NewClientWithCodec(structs.NewRPCClientCodec(stream)), sess: sess}, nil
}

// upgradeTLS writes structs.RPCTypeTLS and runs the TLS handshake, the
// server's certificate verified; on error conn is closed.
func (p *rpcPool) upgradeTLS(ctx context.Context, conn net.Conn) (net.Conn, error) {
	_ = conn.SetWriteDeadline(time.Now().Add(dialTimeout))
	if _, err := conn.Write([]byte{structs.RPCTypeTLS}); err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetWriteDeadline(time.Time{})
	tc, err := p.tls.Client(ctx, conn, dialTimeout)
	if err != nil {
		return nil, err
	}
	return tc, nil
}

// Session timings, as the servers' own (server/pool.go).
const (
	sessionKeepAlive    = 10 * time.Second
	sessionWriteTimeout = 10 * time.Second
)

// acceptStreams serves the streams the server opens on sess until the
// session ends.
func (p *rpcPool) acceptStreams(sess *yamux.Session) {
	defer p.streams.Done()
	for {
		stream, err := sess.Accept()
		if err != nil {
			return
		}
		if p.onStream == nil {
			stream.Close()
			continue
		}
		p.streams.Add(1)
		go func() {
			defer p.streams.Done()
			defer stream.Close()
			p.onStream(stream)
		}()
	}
}
