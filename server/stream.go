package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
)

// clientOps are the streaming calls a server routes to a client
// (structs/client_ops.go).
var clientOps = map[string]bool{
	structs.RPCClientAllocLogs:    true,
	structs.RPCClientAllocStats:   true,
	structs.RPCClientAllocRestart: true,
	structs.RPCClientAllocSignal:  true,
	structs.RPCClientAllocExec:    true,
	structs.RPCClientFSList:       true,
	structs.RPCClientFSStat:       true,
	structs.RPCClientFSReadAt:     true,
	structs.RPCClientNodeStats:    true,
	structs.RPCClientGPUHealth:    true,

	structs.RPCClientNodeGPUHistory:  true,
	structs.RPCClientAllocGPUHistory: true,
	structs.RPCClientAllocChecks:     true, // structs/service.go
}

// nodeAnswerTimeout bounds the wait for a node (or the server it is
// connected to) to answer a client operation's request; a unary one is
// answered once done (a GPU health change waits for the node's
// registration, up to the client's RPC timeout).
const nodeAnswerTimeout = 30 * time.Second

// StreamCall starts a streaming call in process, as a remote caller
// would on a stream: on success it returns the stream, on which the
// operation's messages follow (structs.StreamMsg, or one reply for a
// unary operation). The caller closes it; it is closed when ctx ends.
func (s *Server) StreamCall(ctx context.Context, method, token string, args any) (net.Conn, error) {
	caller, callee := net.Pipe()
	go s.serveStreaming(callee)
	stop := context.AfterFunc(ctx, func() { _ = caller.Close() })
	if err := structs.StartStream(caller, &structs.StreamRequest{Method: method, AuthToken: token}, args); err != nil {
		stop()
		_ = caller.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", method, ctx.Err())
		}
		return nil, err
	}
	return caller, nil
}

// serveStreaming serves one streaming call on conn: a client operation,
// which it relays to the node it is for, over that node's connection to
// this server or to another server.
func (s *Server) serveStreaming(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(firstByteTimeout))
	var req structs.StreamRequest
	if err := structs.ReadStreamMsgLimit(conn, &req, structs.MaxStreamRequest); err != nil {
		return
	}
	args, err := structs.ReadStreamMsgRawLimit(conn, structs.MaxStreamRequest)
	if err != nil {
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	if req.Method == structs.RPCEventStream {
		s.serveEventStream(conn, req.AuthToken, args) // endpoint_event.go
		return
	}
	if !clientOps[req.Method] {
		writeStreamError(conn, fmt.Errorf("streaming call %q: unknown method: %w", req.Method, structs.ErrInvalid))
		return
	}
	// Every server on the way checks the caller's token against what
	// the call targets; a forwarded call must be for the node its
	// target is on.
	nodeID, err := s.authorizeClientOp(req.Method, req.AuthToken, args)
	if err != nil {
		writeStreamError(conn, fmt.Errorf("%s: %w", req.Method, err))
		return
	}
	if req.Forwarded && req.NodeID != nodeID {
		writeStreamError(conn, fmt.Errorf("%s: %w: forwarded for node %s, target is on node %s", req.Method, structs.ErrInvalid, req.NodeID, nodeID))
		return
	}
	req.NodeID = nodeID
	target, err := s.openNodeStream(&req, args)
	if err != nil {
		writeStreamError(conn, fmt.Errorf("%s: %w", req.Method, err))
		return
	}
	defer target.Close()
	relay(conn, target)
}

// authorizeClientOp returns the node a client operation is for, after
// checking that token may make it (clientOpCapability).
func (s *Server) authorizeClientOp(method, token string, rawArgs []byte) (string, error) {
	var t structs.ClientTarget
	if err := structs.Decode(rawArgs, &t); err != nil {
		return "", fmt.Errorf("decode request: %w: %v", structs.ErrInvalid, err)
	}
	a, _, err := s.resolveToken(token)
	if err != nil {
		return "", err
	}
	if !allowClientOp(a, method, "*") {
		return "", errPermissionDenied // before the target is looked up
	}
	nodeID, alloc, err := s.clientOpNode(t)
	if err != nil {
		return "", err
	}
	ns := ""
	if alloc != nil {
		ns = alloc.Namespace
	}
	if !allowClientOp(a, method, ns) {
		return "", errPermissionDenied
	}
	if method == structs.RPCClientAllocExec && alloc != nil {
		// A raw_exec task runs on the host itself: exec into one is
		// exec on the node (Nomad's alloc-node-exec).
		var req structs.ClientExecRequest
		if err := structs.Decode(rawArgs, &req); err != nil {
			return "", fmt.Errorf("decode request: %w: %v", structs.ErrInvalid, err)
		}
		if taskDriver(alloc, req.Task) == "raw_exec" && !a.AllowNamespaceOperation(ns, acl.CapAllocNodeExec) {
			return "", fmt.Errorf("%w: exec into a raw_exec task needs alloc-node-exec", structs.ErrPermissionDenied)
		}
	}
	return nodeID, nil
}

// taskDriver returns the driver of the allocation's task ("" when the
// task is unknown; "" names the only task).
func taskDriver(alloc *structs.Allocation, task string) string {
	if alloc.Job == nil {
		return ""
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil {
		return ""
	}
	for _, t := range tg.Tasks {
		if t != nil && (t.Name == task || task == "" && len(tg.Tasks) == 1) {
			return t.Driver
		}
	}
	return ""
}

// allowClientOp reports whether a may make a client operation: on an
// allocation (in namespace ns) the namespace capability of its kind, on
// a node the node rule.
func allowClientOp(a *acl.ACL, method, ns string) bool {
	switch method {
	case structs.RPCClientAllocLogs:
		return a.AllowNamespaceOperation(ns, acl.CapReadLogs)
	case structs.RPCClientFSList, structs.RPCClientFSStat, structs.RPCClientFSReadAt:
		return a.AllowNamespaceOperation(ns, acl.CapReadFS)
	case structs.RPCClientAllocExec:
		return a.AllowNamespaceOperation(ns, acl.CapAllocExec)
	case structs.RPCClientAllocRestart, structs.RPCClientAllocSignal:
		return a.AllowNamespaceOperation(ns, acl.CapAllocLifecycle)
	case structs.RPCClientAllocStats, structs.RPCClientAllocGPUHistory, structs.RPCClientAllocChecks:
		return a.AllowNamespaceOperation(ns, acl.CapReadJob)
	case structs.RPCClientNodeStats, structs.RPCClientNodeGPUHistory:
		return a.AllowNodeRead()
	case structs.RPCClientGPUHealth:
		return a.AllowNodeWrite()
	}
	return false
}

// clientOpNode returns the node a client operation is for, the node of
// its allocation, else the node it names, and the allocation (nil for a
// node's operation).
func (s *Server) clientOpNode(t structs.ClientTarget) (string, *structs.Allocation, error) {
	switch {
	case t.AllocID != "":
		alloc, err := s.State().AllocByID(nil, t.AllocID)
		if err == nil && alloc == nil {
			// Placed a moment ago, perhaps: catch up with the leader.
			ctx, cancel := s.requestContext(s.config.RPCHoldTimeout)
			if s.ReadBarrier(ctx) == nil {
				alloc, err = s.State().AllocByID(nil, t.AllocID)
			}
			cancel()
		}
		if err != nil {
			return "", nil, err
		}
		if alloc == nil {
			return "", nil, fmt.Errorf("allocation %q: %w", t.AllocID, structs.ErrNotFound)
		}
		return alloc.NodeID, alloc, nil
	case t.NodeID != "":
		node, err := s.State().NodeByID(nil, t.NodeID)
		if err != nil {
			return "", nil, err
		}
		if node == nil {
			return "", nil, fmt.Errorf("node %q: %w", t.NodeID, structs.ErrNotFound)
		}
		return node.ID, nil, nil
	}
	return "", nil, fmt.Errorf("request names no allocation and no node: %w", structs.ErrInvalid)
}

// openNodeStream opens the call on the node's session when the node is
// connected to this server, else (unless the call was forwarded here)
// on each other server in turn until one has the node. It returns the
// stream after the node accepted the call; the node's refusal is the
// error.
func (s *Server) openNodeStream(req *structs.StreamRequest, args []byte) (net.Conn, error) {
	if sess := s.nodeConns.get(req.NodeID); sess != nil {
		stream, err := sess.OpenStream()
		if err != nil {
			return nil, fmt.Errorf("node %s: %w: %v", req.NodeID, structs.ErrNodeNotConnected, err)
		}
		toNode := *req
		toNode.AuthToken = "" // the node needs no token and must not see one
		if err := startRawStream(stream, &toNode, args); err != nil {
			stream.Close()
			return nil, err
		}
		return stream, nil
	}
	if req.Forwarded {
		return nil, fmt.Errorf("node %s on server %s: %w", req.NodeID, s.advertise, structs.ErrNodeNotConnected)
	}
	fwd := *req
	fwd.Forwarded = true
	self := s.advertise.String()
	for _, peer := range s.Peers() {
		if peer == self {
			continue
		}
		stream, err := s.pool.openStream(peer)
		if err != nil {
			s.logger.Debug("client operation: server unreachable", "server", peer, "error", err)
			continue
		}
		err = startRawStream(stream, &fwd, args)
		if err == nil {
			return stream, nil
		}
		stream.Close()
		if !errors.Is(err, structs.ErrNodeNotConnected) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("node %s is not connected to any server: %w", req.NodeID, structs.ErrNodeNotConnected)
}

// startRawStream opens a streaming call on a new stream with arguments
// already encoded, and reads the answer.
func startRawStream(stream net.Conn, req *structs.StreamRequest, args []byte) error {
	_ = stream.SetDeadline(time.Now().Add(nodeAnswerTimeout))
	if _, err := stream.Write([]byte{structs.StreamTypeStreaming}); err != nil {
		return fmt.Errorf("node %s: %w: %v", req.NodeID, structs.ErrNodeNotConnected, err)
	}
	if err := structs.StartStream(stream, req, structs.RawMsg(args)); err != nil {
		switch {
		case structs.IsRemote(err) || structs.CodeOf(err) != structs.CodeInternal:
			return err // the node's (or the other server's) answer
		case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, yamux.ErrTimeout):
			return fmt.Errorf("node %s: no answer in %v: %w", req.NodeID, nodeAnswerTimeout, structs.ErrUnavailable)
		}
		// The stream broke before an answer.
		return fmt.Errorf("node %s: %w: %v", req.NodeID, structs.ErrNodeNotConnected, err)
	}
	_ = stream.SetDeadline(time.Time{})
	return nil
}

// writeStreamError answers a streaming call with err.
func writeStreamError(conn net.Conn, err error) {
	_ = conn.SetWriteDeadline(time.Now().Add(nodeAnswerTimeout))
	_ = structs.WriteStreamMsg(conn, &structs.StreamResponse{Error: structs.EncodeRPCError(err)})
}

// relay answers the caller that the call goes on, then copies both ways
// until either side ends, and closes both.
func relay(caller, target net.Conn) {
	if err := structs.WriteStreamMsg(caller, &structs.StreamResponse{}); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	copyTo := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go copyTo(caller, target)
	go copyTo(target, caller)
	<-done
	_ = caller.Close()
	_ = target.Close()
	<-done
}
