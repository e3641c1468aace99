package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"reflect"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/droverhq/drover/structs"
)

// firstByteTimeout bounds how long a new connection may take to say which
// protocol it speaks.
const firstByteTimeout = 10 * time.Second

// setupRPC registers the endpoints with the net/rpc server and builds the
// in-process dispatch table from the same receivers.
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
	}
	s.rpcServer = rpc.NewServer()
	for name, svc := range services {
		if err := s.rpcServer.RegisterName(name, svc); err != nil {
			return fmt.Errorf("register %s endpoint: %w", name, err)
		}
	}
	s.methods = rpcMethods(services)
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
// connection to Raft.
func (s *Server) handleConn(conn net.Conn) {
	if !s.trackConn(conn) {
		_ = conn.Close()
		return
	}
	defer s.untrackConn(conn)
	var kind [1]byte
	_ = conn.SetReadDeadline(time.Now().Add(firstByteTimeout))
	if _, err := io.ReadFull(conn, kind[:]); err != nil {
		s.logger.Debug("read connection type", "remote", conn.RemoteAddr(), "error", err)
		_ = conn.Close()
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	switch kind[0] {
	case structs.RPCTypeRPC:
		s.rpcServer.ServeCodec(structs.NewRPCServerCodec(conn))
	case structs.RPCTypeMultiplex:
		s.serveMultiplex(conn)
	case structs.RPCTypeRaft:
		s.untrackConn(conn) // raft's transport owns and closes it now
		s.raftLayer.Handoff(conn)
	default:
		s.logger.Warn("unknown connection type", "remote", conn.RemoteAddr(), "type", kind[0])
		_ = conn.Close()
	}
}

// serveMultiplex serves a yamux session: each stream the peer opens is
// one net/rpc connection. Closing conn (Shutdown does) ends the session,
// its streams and so every goroutine started here.
func (s *Server) serveMultiplex(conn net.Conn) {
	sess, err := yamux.Server(conn, yamuxConfig(s.logger))
	if err != nil {
		s.logger.Error("start multiplexed session", "remote", conn.RemoteAddr(), "error", err)
		_ = conn.Close()
		return
	}
	defer sess.Close()
	for {
		stream, err := sess.Accept()
		if err != nil {
			if !sess.IsClosed() {
				s.logger.Debug("accept stream", "remote", conn.RemoteAddr(), "error", err)
			}
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.rpcServer.ServeCodec(structs.NewRPCServerCodec(stream))
		}()
	}
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
	out := m.fn.Call([]reflect.Value{m.rcvr, av, rv})
	if err, _ := out[0].Interface().(error); err != nil {
		return err
	}
	return nil
}

// requestContext returns a context that ends after timeout, when the
// server shuts down, or when cancel is called (which the caller must do).
func (s *Server) requestContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	go func() {
		select {
		case <-s.shutdownCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
