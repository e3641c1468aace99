package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"reflect"
	"sync"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/droverhq/drover/structs"
)

// maxSessionStreams bounds the streams one multiplexed session may hold
// open at once (calls, client operations in flight, forwarded calls).
const maxSessionStreams = 4096

// firstByteTimeout bounds how long a new connection may take to say which
// protocol it speaks.
const firstByteTimeout = 10 * time.Second

// setupRPC builds the dispatch table of the RPC endpoints, served over
// TCP (serveCodec) and in process (RPC) from the same receivers.
func (s *Server) setupRPC() error {
	services := map[string]any{
		"Status": &statusEndpoint{srv: s},
		"Node":   &nodeEndpoint{srv: s},
		"Job":    &jobEndpoint{srv: s},
		"Alloc":  &allocEndpoint{srv: s},

		"Operator":  &operatorEndpoint{srv: s},
		"Namespace": &namespaceEndpoint{srv: s},
		"Quota":     &quotaEndpoint{srv: s},
		"Queue":     &queueEndpoint{srv: s},
		"Cluster":   &clusterEndpoint{srv: s},
		"Snapshot":  &snapshotEndpoint{srv: s},
		"Eval":      &evalEndpoint{srv: s},
		"GPU":       &gpuEndpoint{srv: s},
		"ACL":       &aclEndpoint{srv: s},
		"Keyring":   &keyringEndpoint{srv: s},
		"System":    &systemEndpoint{srv: s},

		"ServiceRegistration": &serviceEndpoint{srv: s}, // endpoint_service.go
		"Scaling":             &scalingEndpoint{srv: s},
		"Periodic":            &periodicEndpoint{srv: s},
		"Variables":           &variablesEndpoint{srv: s},
		"RootKey":             &rootKeyEndpoint{srv: s},
		"Deployment":          &deploymentEndpoint{srv: s}, // endpoint_deployment.go
		"Search":              &searchEndpoint{srv: s},
	}
	s.methods = rpcMethods(services)
	if len(s.methods) == 0 {
		return errors.New("no RPC endpoints")
	}
	return nil
}

// acceptLoop serves the RPC listener until it is closed.
func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.logger.Error("accept RPC connection", "error", err)
			select {
			case <-s.shutdownCh:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handleConn(conn)
		}()
	}
}

// handleConn reads the protocol byte and serves net/rpc or hands the
// connection to Raft. With rpc TLS on, the byte must be
// structs.RPCTypeTLS and the type that picks the protocol follows the
// handshake (rpc_tls.go); plaintext is refused.
func (s *Server) handleConn(conn net.Conn) {
	if !s.trackConn(conn) {
		_ = conn.Close()
		return
	}
	defer s.untrackConn(conn)
	raw := conn
	kind, ok := s.readConnType(conn)
	if !ok {
		return
	}
	if conn, kind, ok = s.maybeTLS(conn, kind); !ok {
		return
	}
	switch kind {
	case structs.RPCTypeRPC:
		s.serveCodec(structs.NewRPCServerCodec(conn), nil)
	case structs.RPCTypeMultiplex:
		s.serveMultiplex(conn, false)
	case structs.RPCTypeNodeMultiplex:
		s.serveMultiplex(conn, true)
	case structs.RPCTypeRaft:
		s.untrackConn(raw) // raft's transport owns and closes it now
		s.raftLayer.Handoff(conn)
	default:
		s.logger.Warn("unknown connection type", "remote", conn.RemoteAddr(), "type", kind)
		_ = conn.Close()
	}
}

// readConnType reads a connection's type byte; on error the connection
// is closed.
func (s *Server) readConnType(conn net.Conn) (byte, bool) {
	var kind [1]byte
	_ = conn.SetReadDeadline(time.Now().Add(firstByteTimeout))
	if _, err := io.ReadFull(conn, kind[:]); err != nil {
		s.logger.Debug("read connection type", "remote", conn.RemoteAddr(), "error", err)
		_ = conn.Close()
		return 0, false
	}
	_ = conn.SetReadDeadline(time.Time{})
	return kind[0], true
}

// serveMultiplex serves a yamux session. Each stream the peer opens
// starts with a byte: structs.StreamTypeRPC (one net/rpc connection) or
// structs.StreamTypeStreaming (one streaming call, stream.go). A node's
// session (fromNode: structs.RPCTypeNodeMultiplex) is also the way back
// to that node (nodeConns); another server's never is, though it
// forwards node calls. Closing conn
// (Shutdown does) ends the session, its streams and so every goroutine
// started here.
func (s *Server) serveMultiplex(conn net.Conn, fromNode bool) {
	sess, err := yamux.Server(conn, yamuxConfig(s.logger))
	if err != nil {
		s.logger.Error("start multiplexed session", "remote", conn.RemoteAddr(), "error", err)
		_ = conn.Close()
		return
	}
	defer sess.Close()
	defer s.nodeConns.dropSession(sess)
	open := make(chan struct{}, maxSessionStreams)
	for {
		stream, err := sess.Accept()
		if err != nil {
			if !sess.IsClosed() {
				s.logger.Debug("accept stream", "remote", conn.RemoteAddr(), "error", err)
			}
			return
		}
		select {
		case open <- struct{}{}:
		default:
			s.logger.Warn("refused a stream: the session has too many", "remote", conn.RemoteAddr(), "limit", maxSessionStreams)
			_ = stream.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-open }()
			if fromNode {
				s.serveStream(stream, sess)
			} else {
				s.serveStream(stream, nil)
			}
		}()
	}
}

// serveStream reads a stream's type byte and serves it.
func (s *Server) serveStream(stream net.Conn, sess *yamux.Session) {
	var kind [1]byte
	_ = stream.SetReadDeadline(time.Now().Add(firstByteTimeout))
	if _, err := io.ReadFull(stream, kind[:]); err != nil {
		_ = stream.Close()
		return
	}
	_ = stream.SetReadDeadline(time.Time{})
	switch kind[0] {
	case structs.StreamTypeRPC:
		s.serveCodec(structs.NewRPCServerCodec(stream), sess)
	case structs.StreamTypeStreaming:
		s.serveStreaming(stream)
	default:
		s.logger.Warn("unknown stream type", "type", kind[0])
		_ = stream.Close()
	}
}

// serveCodec serves net/rpc requests on one connection until it closes,
// each in its own goroutine, as net/rpc's own server does, but through
// the dispatch table: an error's code and sentinel travel with its text
// (structs.EncodeRPCError). sess is the yamux session the connection is
// a stream of, or nil.
func (s *Server) serveCodec(codec rpc.ServerCodec, sess *yamux.Session) {
	var (
		sending sync.Mutex
		calls   sync.WaitGroup
	)
	reply := func(req *rpc.Request, body any, err error) {
		resp := &rpc.Response{ServiceMethod: req.ServiceMethod, Seq: req.Seq}
		if err != nil {
			resp.Error = structs.EncodeRPCError(err)
			body = struct{}{}
		}
		sending.Lock()
		defer sending.Unlock()
		if werr := codec.WriteResponse(resp, body); werr != nil {
			s.logger.Debug("write RPC response", "method", req.ServiceMethod, "error", werr)
		}
	}
	defer func() {
		calls.Wait()
		_ = codec.Close()
	}()
	for {
		req := new(rpc.Request)
		if err := codec.ReadRequestHeader(req); err != nil {
			return
		}
		m, ok := s.methods[req.ServiceMethod]
		if !ok || (sess != nil && serverOnlyMethods[req.ServiceMethod]) {
			if err := codec.ReadRequestBody(nil); err != nil {
				return
			}
			if ok { // a server-only method on a client's session
				reply(req, nil, fmt.Errorf("rpc %s: only servers may call it: %w", req.ServiceMethod, structs.ErrPermissionDenied))
				continue
			}
			reply(req, nil, fmt.Errorf("rpc: unknown method %q: %w", req.ServiceMethod, structs.ErrInvalid))
			continue
		}
		argv := newValue(m.argType)
		if err := codec.ReadRequestBody(argv.Interface()); err != nil {
			reply(req, nil, fmt.Errorf("rpc %s: decode request: %w: %v", req.ServiceMethod, structs.ErrInvalid, err))
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return
			}
			continue
		}
		if fs, ok := argv.Interface().(serverCaller); ok && sess == nil {
			fs.MarkFromServer() // a server's connection, never a node's
		}
		if m.argType.Kind() != reflect.Pointer {
			argv = argv.Elem()
		}
		calls.Add(1)
		go func() {
			defer calls.Done()
			replyv := reflect.New(m.replyType.Elem())
			err := s.callMethod(req.ServiceMethod, m, argv, replyv)
			if err == nil && sess != nil {
				s.nodeConns.noteCall(req.ServiceMethod, argv.Interface(), sess, s.State())
			}
			reply(req, replyv.Interface(), err)
		}()
	}
}

// newValue returns a pointer to a new value to decode an argument of
// type t into (for a pointer type, a pointer to a new element).
func newValue(t reflect.Type) reflect.Value {
	if t.Kind() == reflect.Pointer {
		return reflect.New(t.Elem())
	}
	return reflect.New(t)
}

// trackConn records an open RPC connection so Shutdown can close it; it
// reports false once the server is shutting down.
func (s *Server) trackConn(conn net.Conn) bool {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	if s.conns == nil {
		return false
	}
	s.conns[conn] = struct{}{}
	return true
}

func (s *Server) untrackConn(conn net.Conn) {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	delete(s.conns, conn)
}

// closeConns closes every tracked connection and refuses new ones.
func (s *Server) closeConns() {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	for conn := range s.conns {
		_ = conn.Close()
	}
	s.conns = nil
}

// rpcMethod is one endpoint method for in-process calls.
type rpcMethod struct {
	rcvr      reflect.Value
	fn        reflect.Value
	argType   reflect.Type
	replyType reflect.Type
}

var errorType = reflect.TypeFor[error]()

// rpcMethods lists the methods net/rpc would serve: exported, (args,
// *reply) error.
func rpcMethods(services map[string]any) map[string]rpcMethod {
	out := map[string]rpcMethod{}
	for name, svc := range services {
		v := reflect.ValueOf(svc)
		t := v.Type()
		for i := range t.NumMethod() {
			m := t.Method(i)
			mt := m.Type
			if mt.NumIn() != 3 || mt.NumOut() != 1 || mt.Out(0) != errorType || mt.In(2).Kind() != reflect.Pointer {
				continue
			}
			out[name+"."+m.Name] = rpcMethod{rcvr: v, fn: m.Func, argType: mt.In(1), replyType: mt.In(2)}
		}
	}
	return out
}

// RPC calls an endpoint in process, as a remote client would over TCP but
// without encoding: errors keep their identity (errors.Is works). args may
// be given by value or by pointer; reply must be a pointer. The endpoint
// forwards to the leader as it does for a remote caller; a call that
// this server served as the leader and that failed because it lost its
// leadership meanwhile is tried again (forward.go: retryLocal).
func (s *Server) RPC(method string, args, reply any) error {
	return s.retryLocal(method, args, reply, func() error { return s.callLocal(method, args, reply) })
}

// callLocal is one in-process call of an endpoint.
func (s *Server) callLocal(method string, args, reply any) error {
	m, ok := s.methods[method]
	if !ok {
		return fmt.Errorf("rpc %s: unknown method: %w", method, structs.ErrInvalid)
	}
	av := reflect.ValueOf(args)
	switch {
	case !av.IsValid():
		return fmt.Errorf("rpc %s: nil args: %w", method, structs.ErrInvalid)
	case av.Type() == m.argType:
	case av.Kind() == reflect.Pointer && av.Type().Elem() == m.argType && !av.IsNil():
		av = av.Elem()
	case m.argType.Kind() == reflect.Pointer && av.Type() == m.argType.Elem():
		p := reflect.New(av.Type())
		p.Elem().Set(av)
		av = p
	default:
		return fmt.Errorf("rpc %s: args are %T, want %s: %w", method, args, m.argType, structs.ErrInvalid)
	}
	rv := reflect.ValueOf(reply)
	if !rv.IsValid() || rv.Type() != m.replyType || rv.IsNil() {
		return fmt.Errorf("rpc %s: reply is %T, want %s: %w", method, reply, m.replyType, structs.ErrInvalid)
	}
	return s.callMethod(method, m, av, rv)
}

// callMethod calls an endpoint method with args and reply values of its
// types.
func (s *Server) callMethod(method string, m rpcMethod, args, reply reflect.Value) error {
	out := m.fn.Call([]reflect.Value{m.rcvr, args, reply})
	if err, _ := out[0].Interface().(error); err != nil {
		return err
	}
	return nil
}

// queryContext is the context of a blocking query: it ends after the
// query's wait (at most maxQueryTime), when the in-process caller's
// context ends, or when the server shuts down.
func (s *Server) queryContext(q structs.QueryOptions) (context.Context, context.CancelFunc) {
	wait := q.MaxQueryTime
	if wait <= 0 || wait > maxQueryTime {
		wait = maxQueryTime
	}
	return s.requestContextFrom(q.Context(), wait)
}

// requestContext returns a context that ends after timeout, when the
// server shuts down, or when cancel is called (which the caller must do).
func (s *Server) requestContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	return s.requestContextFrom(context.Background(), timeout)
}

// requestContextFrom is requestContext below parent.
func (s *Server) requestContextFrom(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	go func() {
		select {
		case <-s.shutdownCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
