package server

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/droverhq/drover/structs"
)

// maybeTLS applies the RPC port's TLS rule to a new connection whose
// first byte was kind. Without rpc TLS it passes plaintext through and
// refuses structs.RPCTypeTLS. With it, plaintext is refused, and a TLS
// connection is handshaken (a client certificate from the CA required)
// and its inner type byte read; the connection types only servers use
// (Raft, forwarding sessions, single calls) then need a server
// certificate when verify_server_hostname is on, while a node's session
// takes any certificate from the CA. It returns the connection to serve
// and its type, or false after closing it.
func (s *Server) maybeTLS(conn net.Conn, kind byte) (net.Conn, byte, bool) {
	t := s.config.TLS
	switch {
	case t == nil && kind == structs.RPCTypeTLS:
		s.logger.Warn("refused a TLS connection: rpc TLS is not configured", "remote", conn.RemoteAddr())
		_ = conn.Close()
		return nil, 0, false
	case t == nil:
		return conn, kind, true
	case kind != structs.RPCTypeTLS:
		s.logger.Warn("refused a plaintext connection: rpc TLS is on", "remote", conn.RemoteAddr(), "type", kind)
		_ = conn.Close()
		return nil, 0, false
	}
	tc, err := t.Server(context.Background(), conn, firstByteTimeout)
	if err != nil {
		s.logger.Warn("refused a connection", "remote", conn.RemoteAddr(), "error", err)
		return nil, 0, false
	}
	inner, ok := s.readConnType(tc)
	if !ok {
		return nil, 0, false
	}
	switch inner {
	case structs.RPCTypeRPC, structs.RPCTypeRaft, structs.RPCTypeMultiplex:
		if err := t.CheckServerPeer(tc.ConnectionState()); err != nil {
			s.logger.Warn("refused a server connection from a peer that is not a server", "remote", conn.RemoteAddr(), "type", inner, "error", err)
			_ = tc.Close()
			return nil, 0, false
		}
	}
	return tc, inner, true
}

// dialRPC opens a connection to another server's RPC port for Raft,
// forwarding or a single call, through dialPeer (the test partition
// hook): over TLS when configured, the server's certificate verified
// (its name too, with verify_server_hostname). The caller writes its
// connection type.
func (s *Server) dialRPC(addr string, timeout time.Duration) (net.Conn, error) {
	conn, err := s.dialPeer(addr, timeout)
	if err != nil || s.config.TLS == nil {
		return conn, err
	}
	_ = conn.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte{structs.RPCTypeTLS}); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	_ = conn.SetWriteDeadline(time.Time{})
	tc, err := s.config.TLS.Client(context.Background(), conn, timeout)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return tc, nil
}
