package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/droverhq/drover/client/allocfs"
	"github.com/droverhq/drover/client/allocrunner"
	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// Client operations (structs/client_ops.go) arrive as streams the
// servers open on the client's connection to them (rpc.go). Each one is
// a request and its arguments; a unary operation answers a
// StreamResponse and its reply, a streaming one a StreamResponse and
// StreamMsg messages until it ends. Requests are checked here: an
// allocation this client does not run, a task it does not have, a path
// outside the allocation's directory are refused with coded errors.

// opRequestTimeout bounds reading an operation's request.
const opRequestTimeout = 10 * time.Second

// unaryOp answers one request with one reply.
type unaryOp func(ctx context.Context, args []byte) (any, error)

// streamOp checks a request and returns the function that streams the
// answer (after the StreamResponse), or the request's error.
type streamOp func(ctx context.Context, args []byte) (func(ctx context.Context, stream net.Conn) error, error)

func (c *Client) unaryOps() map[string]unaryOp {
	return map[string]unaryOp{
		structs.RPCClientAllocStats:   c.opAllocStats,
		structs.RPCClientAllocRestart: c.opAllocRestart,
		structs.RPCClientAllocSignal:  c.opAllocSignal,
		structs.RPCClientNodeStats:    c.opNodeStats,
		structs.RPCClientGPUHealth:    c.opGPUHealth,
		structs.RPCClientFSList:       c.opFSList,
		structs.RPCClientFSStat:       c.opFSStat,

		// GPU utilisation history (gpu_history.go).
		structs.RPCClientNodeGPUHistory:  c.opNodeGPUHistory,
		structs.RPCClientAllocGPUHistory: c.opAllocGPUHistory,
		structs.RPCClientAllocChecks:     c.opAllocChecks, // services.go
	}
}

func (c *Client) streamOps() map[string]streamOp {
	return map[string]streamOp{
		structs.RPCClientAllocLogs: c.opLogs,
		structs.RPCClientFSReadAt:  c.opFSReadAt,
		structs.RPCClientAllocExec: c.opExec,
	}
}

// serveStream serves one stream a server opened.
func (c *Client) serveStream(stream net.Conn) {
	_ = stream.SetReadDeadline(time.Now().Add(opRequestTimeout))
	var kind [1]byte
	if _, err := io.ReadFull(stream, kind[:]); err != nil || kind[0] != structs.StreamTypeStreaming {
		return
	}
	var req structs.StreamRequest
	if err := structs.ReadStreamMsgLimit(stream, &req, structs.MaxStreamRequest); err != nil {
		return
	}
	args, err := structs.ReadStreamMsgRawLimit(stream, structs.MaxStreamRequest)
	if err != nil {
		return
	}
	_ = stream.SetReadDeadline(time.Time{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if req.NodeID != "" && req.NodeID != c.NodeID() {
		answer(stream, fmt.Errorf("%s: this is node %s, not %s: %w", req.Method, c.NodeID(), req.NodeID, structs.ErrNodeNotConnected))
		return
	}
	if op, ok := c.unaryOps()[req.Method]; ok {
		// Encoded before the answer, so that a reply over the limit is
		// an error the caller gets, not a stream cut short.
		var reply bytes.Buffer
		res, err := op(ctx, args)
		if err == nil {
			err = structs.WriteStreamMsg(&reply, res)
		}
		if answer(stream, err) && err == nil {
			_, _ = stream.Write(reply.Bytes())
		}
		return
	}
	op, ok := c.streamOps()[req.Method]
	if !ok {
		answer(stream, fmt.Errorf("client operation %q: unknown method: %w", req.Method, structs.ErrInvalid))
		return
	}
	run, err := op(ctx, args)
	if !answer(stream, err) || err != nil {
		return
	}
	// The caller going away (its stream closed) ends the operation;
	// exec reads the caller's input itself.
	if req.Method != structs.RPCClientAllocExec {
		watchCaller(stream, cancel)
	}
	if err := run(ctx, stream); err != nil && ctx.Err() == nil {
		c.logger.Debug("client operation ended", "method", req.Method, "error", err)
		_ = structs.WriteStreamMsg(stream, &structs.StreamMsg{Error: structs.EncodeRPCError(err)})
	}
}

// answer writes the StreamResponse for err; it reports whether the
// write succeeded.
func answer(stream net.Conn, err error) bool {
	resp := &structs.StreamResponse{}
	if err != nil {
		resp.Error = structs.EncodeRPCError(err)
	}
	return structs.WriteStreamMsg(stream, resp) == nil
}

// watchCaller cancels ctx when the caller's side of the stream ends,
// for operations that read nothing after their request.
func watchCaller(stream net.Conn, cancel context.CancelFunc) {
	go func() {
		defer cancel()
		_, _ = io.Copy(io.Discard, stream)
	}()
}

// decodeArgs decodes an operation's arguments.
func decodeArgs(args []byte, out any) error {
	if err := structs.Decode(args, out); err != nil {
		return fmt.Errorf("decode request: %w: %v", structs.ErrInvalid, err)
	}
	return nil
}

// runnerOf returns the runner of an allocation this client runs.
func (c *Client) runnerOf(allocID string) (*runner, error) {
	c.allocMu.Lock()
	r := c.runners[allocID]
	c.allocMu.Unlock()
	if r == nil {
		return nil, fmt.Errorf("allocation %s on node %s: %w", allocID, c.NodeID(), ErrUnknownAlloc)
	}
	return r, nil
}

func (c *Client) opAllocStats(_ context.Context, args []byte) (any, error) {
	var req structs.ClientAllocRequest
	if err := decodeArgs(args, &req); err != nil {
		return nil, err
	}
	return c.AllocStats(req.AllocID)
}

func (c *Client) opAllocRestart(_ context.Context, args []byte) (any, error) {
	var req structs.ClientAllocRequest
	if err := decodeArgs(args, &req); err != nil {
		return nil, err
	}
	if err := c.RestartAlloc(req.AllocID, req.Task); err != nil {
		return nil, err
	}
	return &structs.GenericResponse{}, nil
}

func (c *Client) opAllocSignal(_ context.Context, args []byte) (any, error) {
	var req structs.ClientAllocRequest
	if err := decodeArgs(args, &req); err != nil {
		return nil, err
	}
	r, err := c.runnerOf(req.AllocID)
	if err != nil {
		return nil, err
	}
	if err := r.ar.SignalTask(req.Task, req.Signal); err != nil {
		return nil, err
	}
	return &structs.GenericResponse{}, nil
}

func (c *Client) opNodeStats(ctx context.Context, _ []byte) (any, error) {
	return c.NodeStats(ctx), nil
}

func (c *Client) opGPUHealth(_ context.Context, args []byte) (any, error) {
	var req structs.ClientGPUHealthRequest
	if err := decodeArgs(args, &req); err != nil {
		return nil, err
	}
	if err := c.SetDeviceHealth(req.DeviceID, req.Healthy, req.Reason); err != nil {
		return nil, err
	}
	return &structs.GPUHealthResponse{ID: req.DeviceID, Healthy: req.Healthy, Reason: req.Reason}, nil
}

// allocFS opens an allocation's directory: of an allocation this client
// runs, or one it ran whose directory is still there.
func (c *Client) allocFS(allocID string) (*allocfs.FS, *runner, error) {
	if allocID == "" || allocID == "." || allocID == ".." || strings.ContainsAny(allocID, `/\`) {
		return nil, nil, fmt.Errorf("allocation ID %q: %w", allocID, structs.ErrInvalid)
	}
	c.allocMu.Lock()
	r := c.runners[allocID]
	c.allocMu.Unlock()
	dir := allocrunner.AllocDir(c.cfg.DataDir, allocID)
	if r != nil {
		dir = r.ar.AllocDir()
	}
	fs, err := allocfs.Open(dir)
	if errors.Is(err, structs.ErrNotFound) {
		return nil, nil, fmt.Errorf("allocation %s on node %s: %w", allocID, c.NodeID(), ErrUnknownAlloc)
	}
	return fs, r, err
}

func (c *Client) opFSList(_ context.Context, args []byte) (any, error) {
	return c.withFS(args, func(fs *allocfs.FS, path string) (any, error) { return fs.List(path) })
}

func (c *Client) opFSStat(_ context.Context, args []byte) (any, error) {
	return c.withFS(args, func(fs *allocfs.FS, path string) (any, error) { return fs.Stat(path) })
}

// withFS decodes a ClientFSRequest and runs fn on its allocation's
// directory.
func (c *Client) withFS(args []byte, fn func(fs *allocfs.FS, path string) (any, error)) (any, error) {
	var req structs.ClientFSRequest
	if err := decodeArgs(args, &req); err != nil {
		return nil, err
	}
	fs, _, err := c.allocFS(req.AllocID)
	if err != nil {
		return nil, err
	}
	defer fs.Close()
	return fn(fs, req.Path)
}

// fsChunk is the most file data one StreamMsg carries.
const fsChunk = 64 << 10

func (c *Client) opFSReadAt(_ context.Context, args []byte) (func(context.Context, net.Conn) error, error) {
	var req structs.ClientFSRequest
	if err := decodeArgs(args, &req); err != nil {
		return nil, err
	}
	fs, _, err := c.allocFS(req.AllocID)
	if err != nil {
		return nil, err
	}
	limit := req.Limit
	if limit <= 0 {
		limit = -1
	}
	rc, err := fs.ReadAt(req.Path, req.Offset, limit)
	if err != nil {
		fs.Close()
		return nil, err
	}
	return func(ctx context.Context, stream net.Conn) error {
		defer fs.Close()
		defer rc.Close()
		buf := make([]byte, fsChunk)
		for ctx.Err() == nil {
			n, err := rc.Read(buf)
			if n > 0 {
				if werr := structs.WriteStreamMsg(stream, &structs.StreamMsg{Data: buf[:n]}); werr != nil {
					return werr
				}
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
		}
		return ctx.Err()
	}, nil
}

func (c *Client) opLogs(_ context.Context, args []byte) (func(context.Context, net.Conn) error, error) {
	var req structs.ClientLogsRequest
	if err := decodeArgs(args, &req); err != nil {
		return nil, err
	}
	fs, r, err := c.allocFS(req.AllocID)
	if err != nil {
		return nil, err
	}
	if r != nil && !hasTask(r.ar.Alloc(), req.Task) {
		fs.Close()
		return nil, fmt.Errorf("allocation %s has no task %q: %w", req.AllocID, req.Task, structs.ErrNotFound)
	}
	dead := func() bool { return true } // a directory left behind
	if r != nil {
		dead = func() bool { return taskDead(r.ar.Alloc(), req.Task) }
	}
	opts := allocfs.LogsOptions{Task: req.Task, Stderr: req.Stderr, Origin: req.Origin, Offset: req.Offset, Follow: req.Follow}
	return func(ctx context.Context, stream net.Conn) error {
		defer fs.Close()
		return fs.Logs(ctx, opts, dead, func(f *structs.StreamFrame) error {
			return structs.WriteStreamMsg(stream, &structs.StreamMsg{Frame: f})
		})
	}, nil
}

// hasTask reports whether the allocation's group has the task.
func hasTask(a *structs.Allocation, task string) bool {
	if a == nil || a.Job == nil {
		return false
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return false
	}
	for _, t := range tg.Tasks {
		if t.Name == task {
			return true
		}
	}
	return false
}

// taskDead reports whether the task has finished for good.
func taskDead(a *structs.Allocation, task string) bool {
	if a == nil {
		return true
	}
	if ts := a.TaskStates[task]; ts != nil && ts.State == structs.TaskStateDead {
		return true
	}
	return a.ClientTerminalStatus()
}

func (c *Client) opExec(_ context.Context, args []byte) (func(context.Context, net.Conn) error, error) {
	var req structs.ClientExecRequest
	if err := decodeArgs(args, &req); err != nil {
		return nil, err
	}
	if len(req.Command) == 0 || req.Command[0] == "" {
		return nil, fmt.Errorf("exec: a command is required: %w", structs.ErrInvalid)
	}
	r, err := c.runnerOf(req.AllocID)
	if err != nil {
		return nil, err
	}
	if !hasTask(r.ar.Alloc(), req.Task) {
		return nil, fmt.Errorf("allocation %s has no task %q: %w", req.AllocID, req.Task, structs.ErrNotFound)
	}
	return func(ctx context.Context, stream net.Conn) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stdin, stdinW := io.Pipe()
		defer stdin.Close()
		resize := make(chan drivers.TerminalSize, 4)
		go readExecInput(stream, stdinW, resize, cancel)
		out := &execOutput{stream: stream, cancel: cancel}
		code, err := r.ar.ExecTask(ctx, req.Task, &drivers.ExecOptions{
			Command: req.Command, TTY: req.TTY, Stdin: stdin,
			Stdout: out.writer(false), Stderr: out.writer(true), Resize: resize,
		})
		if err != nil {
			return err
		}
		return out.send(&structs.StreamMsg{Exited: true, ExitCode: code})
	}, nil
}

// execInputQueue bounds the caller's input messages waiting for a
// command that does not read them (each at most MaxStreamMessage).
const execInputQueue = 64

// readExecInput feeds what the caller sends to an exec'd command: input
// and its end, and terminal sizes. It never blocks on the command: input
// waits in a bounded queue that writeExecInput drains, so the caller
// going away (its stream ending) always ends the exec, and a caller that
// sends more than a command that does not read its input takes ends it
// too.
func readExecInput(stream net.Conn, stdin *io.PipeWriter, resize chan<- drivers.TerminalSize, cancel context.CancelFunc) {
	defer cancel()
	queue := make(chan structs.StreamMsg, execInputQueue)
	defer close(queue)
	go writeExecInput(queue, stdin)
	for {
		var m structs.StreamMsg
		if err := structs.ReadStreamMsg(stream, &m); err != nil {
			stdin.CloseWithError(err)
			return
		}
		if m.TTYSize != nil {
			select {
			case resize <- drivers.TerminalSize{Height: m.TTYSize.Height, Width: m.TTYSize.Width}:
			default: // a burst of resizes: the later ones win
			}
		}
		if len(m.Stdin) == 0 && !m.StdinClosed {
			continue
		}
		select {
		case queue <- m:
		default:
			stdin.CloseWithError(errors.New("exec: input overrun: the command does not read its input"))
			return
		}
	}
}

// writeExecInput writes queued input to the command until the queue
// closes or the command's input does.
func writeExecInput(queue <-chan structs.StreamMsg, stdin *io.PipeWriter) {
	for m := range queue {
		if len(m.Stdin) > 0 {
			if _, err := stdin.Write(m.Stdin); err != nil {
				continue // closed: drain the queue
			}
		}
		if m.StdinClosed {
			stdin.Close()
		}
	}
}

// execOutput sends an exec'd command's output to the caller, one
// message per write.
type execOutput struct {
	mu     sync.Mutex
	stream net.Conn
	cancel context.CancelFunc
}

// send writes a message; a failed write (the caller went away) ends the
// exec.
func (o *execOutput) send(m *structs.StreamMsg) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	err := structs.WriteStreamMsg(o.stream, m)
	if err != nil && o.cancel != nil {
		o.cancel()
	}
	return err
}

type execWriter struct {
	out    *execOutput
	stderr bool
}

func (o *execOutput) writer(stderr bool) io.Writer { return execWriter{out: o, stderr: stderr} }

func (w execWriter) Write(p []byte) (int, error) {
	for chunk := range slices.Chunk(p, fsChunk) {
		m := &structs.StreamMsg{Stdout: chunk}
		if w.stderr {
			m = &structs.StreamMsg{Stderr: chunk}
		}
		if err := w.out.send(m); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// RPC calls a server endpoint, for the agent's HTTP API on a client-only
// agent: the servers forward it as they need. A blocking query waits up
// to its own wait on top of the client's RPC timeout.
func (c *Client) RPC(ctx context.Context, method string, args, reply any) error {
	timeout := c.cfg.RPCTimeout
	if q, ok := args.(interface {
		QueryWait() (blocking bool, wait time.Duration)
	}); ok {
		if blocking, wait := q.QueryWait(); blocking {
			if wait <= 0 || wait > DefaultMaxQueryTime {
				wait = DefaultMaxQueryTime // the servers' cap
			}
			timeout += wait + wait/16
		}
	}
	return c.rpc.callUser(ctx, timeout, method, args, reply)
}

// StreamCall starts a streaming call (a client operation on any node)
// through the server this client is connected to; see
// server.Server.StreamCall.
func (c *Client) StreamCall(ctx context.Context, method, token string, args any) (net.Conn, error) {
	stream, err := c.rpc.openStream(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = stream.Close() })
	if err := structs.StartStream(stream, &structs.StreamRequest{Method: method, AuthToken: token}, args); err != nil {
		stop()
		_ = stream.Close()
		return nil, err
	}
	return stream, nil
}
