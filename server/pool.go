package server

import (
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"

	"github.com/droverhq/drover/structs"
)

// Pool timings.
const (
	// poolKeepAlive is how often an idle session pings its peer, so a
	// session to a server that vanished is noticed and closed.
	poolKeepAlive = 10 * time.Second
	// poolWriteTimeout bounds one write on a session's connection.
	poolWriteTimeout = 10 * time.Second
)

// errNotSent marks a call that failed before its request left this
// server (dial or stream open): retrying it cannot apply it twice.
// errNoAnswer marks one that failed after: the server may have applied
// it.
var (
	errNotSent  = errors.New("request not sent")
	errNoAnswer = errors.New("request sent, no answer")
)

// connPool holds one yamux session per server that this server calls
// (the leader, when forwarding), over a connection that starts with
// structs.RPCTypeMultiplex. Each call opens its own stream on the
// session, so calls to one server run concurrently on one TCP
// connection and one slow call (a blocking query) delays no other.
type connPool struct {
	logger      hclog.Logger
	dialFn      func(addr string, timeout time.Duration) (net.Conn, error)
	dialTimeout time.Duration

	mu       sync.Mutex
	sessions map[string]*yamux.Session
	closed   bool
}

// newConnPool returns a pool that connects with dial (Server.dialRPC:
// TLS when configured, through the test partition hook).
func newConnPool(logger hclog.Logger, dial func(addr string, timeout time.Duration) (net.Conn, error), dialTimeout time.Duration) *connPool {
	return &connPool{logger: logger, dialFn: dial, dialTimeout: dialTimeout, sessions: map[string]*yamux.Session{}}
}

// call runs method on the server at addr and waits at most timeout for
// the answer. An error the remote endpoint returned is a
// *structs.RemoteError with its code and sentinel; one that wraps
// errNotSent never reached the server; one that wraps errNoAnswer is a
// transport failure after the request was sent, and closes the session.
func (p *connPool) call(addr string, timeout time.Duration, method string, args, reply any) error {
	sess, err := p.session(addr)
	if err != nil {
		return fmt.Errorf("%w: %w", errNotSent, err)
	}
	stream, err := sess.OpenStream()
	if err != nil {
		p.discard(addr, sess)
		return fmt.Errorf("%w: open stream to %s: %w", errNotSent, addr, err)
	}
	_ = stream.SetDeadline(time.Now().Add(timeout))
	if _, err := stream.Write([]byte{structs.StreamTypeRPC}); err != nil {
		_ = stream.Close()
		p.discard(addr, sess)
		return fmt.Errorf("%w: open stream to %s: %w", errNotSent, addr, err)
	}
	codec := structs.NewRPCClientCodec(stream)
	defer codec.Close()
	err = callCodec(codec, method, args, reply)
	var serverErr rpc.ServerError
	if err != nil && !errors.As(err, &serverErr) {
		// A stream past its deadline is this call's alone (closing it
		// resets just the stream); any other failure is the session's,
		// which is closed so the next call dials afresh.
		if !errors.Is(err, yamux.ErrTimeout) || sess.IsClosed() {
			p.discard(addr, sess)
		}
		return fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	return structs.DecodeRPCError(err)
}

// openStream opens a new stream to the server at addr, for a streaming
// call (stream.go); the caller writes its type byte and closes it.
func (p *connPool) openStream(addr string) (net.Conn, error) {
	sess, err := p.session(addr)
	if err != nil {
		return nil, err
	}
	stream, err := sess.OpenStream()
	if err != nil {
		p.discard(addr, sess)
		return nil, fmt.Errorf("open stream to %s: %w", addr, err)
	}
	return stream, nil
}

// callCodec is one synchronous net/rpc exchange on codec, without
// rpc.Client's reader goroutine.
func callCodec(codec rpc.ClientCodec, method string, args, reply any) error {
	if err := codec.WriteRequest(&rpc.Request{ServiceMethod: method, Seq: 1}, args); err != nil {
		return fmt.Errorf("send %s: %w", method, err)
	}
	var resp rpc.Response
	if err := codec.ReadResponseHeader(&resp); err != nil {
		return fmt.Errorf("read %s answer: %w", method, err)
	}
	if resp.Error != "" {
		_ = codec.ReadResponseBody(nil)
		return rpc.ServerError(resp.Error)
	}
	if err := codec.ReadResponseBody(reply); err != nil {
		return fmt.Errorf("read %s answer: %w", method, err)
	}
	return nil
}

// session returns the open session to addr, dialing one if there is
// none. Dialing happens outside the lock; of two racing dials to one
// server the first one stored wins.
func (p *connPool) session(addr string) (*yamux.Session, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, structs.ErrShuttingDown
	}
	if s := p.sessions[addr]; s != nil && !s.IsClosed() {
		p.mu.Unlock()
		return s, nil
	}
	p.mu.Unlock()

	fresh, err := p.dial(addr)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = fresh.Close()
		return nil, structs.ErrShuttingDown
	}
	if s := p.sessions[addr]; s != nil && !s.IsClosed() {
		_ = fresh.Close()
		return s, nil
	}
	p.sessions[addr] = fresh
	return fresh, nil
}

func (p *connPool) dial(addr string) (*yamux.Session, error) {
	conn, err := p.dialFn(addr, p.dialTimeout)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if _, err := conn.Write([]byte{structs.RPCTypeMultiplex}); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	sess, err := yamux.Client(conn, yamuxConfig(p.logger))
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	p.logger.Debug("opened session", "addr", addr)
	return sess, nil
}

// discard closes sess and forgets it if it is still addr's session.
func (p *connPool) discard(addr string, sess *yamux.Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions[addr] == sess {
		delete(p.sessions, addr)
	}
	_ = sess.Close()
}

// Close closes every session (calls in flight fail) and refuses new
// calls.
func (p *connPool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for addr, s := range p.sessions {
		_ = s.Close()
		delete(p.sessions, addr)
	}
}

// yamuxConfig is the session configuration of both ends, logging
// through logger.
func yamuxConfig(logger hclog.Logger) *yamux.Config {
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = nil
	cfg.Logger = logger.Named("yamux").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	cfg.KeepAliveInterval = poolKeepAlive
	cfg.ConnectionWriteTimeout = poolWriteTimeout
	return cfg
}
