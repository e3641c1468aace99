package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/structs"
)

// execHandshakeTimeout bounds the websocket handshake of Exec.
const execHandshakeTimeout = 30 * time.Second

// execStdinChunk is the most input one stdin message carries.
const execStdinChunk = 32 << 10

// Exec's websocket messages, Nomad's shape (api.ExecStreamingInput and
// api.ExecStreamingOutput).
type (
	execIO struct {
		Data  []byte `json:"data,omitempty"`
		Close bool   `json:"close,omitempty"`
	}
	execTTYSize struct {
		Height int `json:"height"`
		Width  int `json:"width"`
	}
	execInput struct {
		Stdin   *execIO      `json:"stdin,omitempty"`
		TTYSize *execTTYSize `json:"tty_size,omitempty"`
	}
	execOutput struct {
		Stdout *execIO `json:"stdout,omitempty"`
		Stderr *execIO `json:"stderr,omitempty"`
		Exited bool    `json:"exited,omitempty"`
		Result *struct {
			ExitCode int `json:"exit_code"`
		} `json:"result,omitempty"`
	}
)

// Exec runs command in a running task of an allocation (task "" when
// the allocation's group has one task) on whatever node it is, and
// returns the command's exit code. allocID may be a unique prefix.
//
// stdin is copied to the command and its end passed on (nil is empty
// input); the command's output is written to stdout and stderr. With tty
// the command gets a terminal, and each size received from resize (may
// be nil) is sent as its new size; a size already waiting on resize when
// the connection opens is sent before any input.
//
// Errors, with exit code -1: a *StatusError when the agent refuses the
// request (404 for an unknown allocation, 400 for a bad command), the
// agent's reason when it ends the session with an error, ctx's error
// when ctx ends (the connection is closed then). A Read of stdin that
// blocks is not waited for: its goroutine ends when that Read returns.
func (a *Allocations) Exec(ctx context.Context, allocID, task string, tty bool, command []string,
	stdin io.Reader, stdout, stderr io.Writer, resize <-chan structs.TerminalSize) (int, error) {
	if len(command) == 0 || command[0] == "" {
		return -1, errors.New("exec: no command given")
	}
	if stdout == nil || stderr == nil {
		return -1, errors.New("exec: stdout and stderr must be set")
	}
	conn, err := a.c.dialExec(ctx, allocID, task, tty, command)
	if err != nil {
		return -1, err
	}
	sessCtx, cancel := context.WithCancel(ctx)
	s := &execSession{conn: conn, cancel: cancel}
	var wg sync.WaitGroup
	wg.Go(func() {
		<-sessCtx.Done()
		conn.Close() // ends a blocked read or write
	})
	s.sendWaitingSize(resize)
	wg.Go(func() { s.sendSizes(sessCtx, resize) })
	go s.sendStdin(sessCtx, stdin)
	code, err := s.receive(stdout, stderr)
	cancel()
	wg.Wait()
	if ctx.Err() != nil {
		return -1, fmt.Errorf("exec: %w", ctx.Err())
	}
	if sendErr := s.sendFailure(); sendErr != nil {
		return -1, sendErr
	}
	return code, err
}

// dialExec opens the exec websocket with the client's address, TLS
// settings and default query parameters.
func (c *Client) dialExec(ctx context.Context, allocID, task string, tty bool, command []string) (*websocket.Conn, error) {
	cmd, err := json.Marshal(command)
	if err != nil {
		return nil, fmt.Errorf("exec: encode command: %w", err)
	}
	r := c.newRequest(http.MethodGet, "/v1/client/allocation/"+pathID(allocID)+"/exec")
	r.params.Set("task", task)
	r.params.Set("tty", strconv.FormatBool(tty))
	r.params.Set("command", string(cmd))
	u, err := url.Parse(c.base.String() + r.path + "?" + r.params.Encode())
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	d := websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: execHandshakeTimeout}
	if t, ok := c.http.Transport.(*http.Transport); ok {
		d.Proxy, d.NetDialContext, d.TLSClientConfig = t.Proxy, t.DialContext, t.TLSClientConfig.Clone()
	}
	header := http.Header{}
	c.setToken(header)
	conn, resp, err := d.DialContext(ctx, u.String(), header)
	if err != nil {
		if errors.Is(err, websocket.ErrBadHandshake) && resp != nil {
			// gorilla keeps the start of the body; it needs no Close.
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			return nil, &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(msg))}
		}
		return nil, fmt.Errorf("exec: GET %s: %w", r.path, err)
	}
	return conn, nil
}

// execSession is one open exec websocket. Writes are serialised by mu
// (a websocket has one writer at a time); reads happen in receive only.
type execSession struct {
	conn   *websocket.Conn
	cancel context.CancelFunc

	mu      sync.Mutex
	sendErr error // the first failure to read stdin or send
}

func (s *execSession) send(in *execInput) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn.WriteJSON(in)
}

// fail records why input could not be passed on and ends the session.
func (s *execSession) fail(err error) {
	s.mu.Lock()
	if s.sendErr == nil {
		s.sendErr = err
	}
	s.mu.Unlock()
	s.cancel()
}

func (s *execSession) sendFailure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sendErr
}

// sendStdin copies stdin as stdin messages, then sends its end. A failed
// send is left to receive to report (the connection is gone).
func (s *execSession) sendStdin(ctx context.Context, stdin io.Reader) {
	if stdin == nil {
		_ = s.send(&execInput{Stdin: &execIO{Close: true}})
		return
	}
	buf := make([]byte, execStdinChunk)
	for ctx.Err() == nil {
		n, err := stdin.Read(buf)
		if n > 0 && ctx.Err() == nil {
			if s.send(&execInput{Stdin: &execIO{Data: buf[:n]}}) != nil {
				return
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			_ = s.send(&execInput{Stdin: &execIO{Close: true}})
			return
		case err != nil && ctx.Err() == nil:
			s.fail(fmt.Errorf("exec: read stdin: %w", err))
			return
		}
	}
}

// sendWaitingSize sends a size already waiting on resize, so that the
// command's terminal has it before any input.
func (s *execSession) sendWaitingSize(resize <-chan structs.TerminalSize) {
	select {
	case size, ok := <-resize:
		if ok {
			_ = s.send(&execInput{TTYSize: &execTTYSize{Height: int(size.Height), Width: int(size.Width)}})
		}
	default:
	}
}

// sendSizes sends each size from resize until ctx ends or resize closes.
func (s *execSession) sendSizes(ctx context.Context, resize <-chan structs.TerminalSize) {
	for {
		select {
		case <-ctx.Done():
			return
		case size, ok := <-resize:
			if !ok {
				return
			}
			if s.send(&execInput{TTYSize: &execTTYSize{Height: int(size.Height), Width: int(size.Width)}}) != nil {
				return
			}
		}
	}
}

// receive writes the command's output until it exits, and returns its
// exit code.
func (s *execSession) receive(stdout, stderr io.Writer) (int, error) {
	for {
		var out execOutput
		err := s.conn.ReadJSON(&out)
		var ce *websocket.CloseError
		switch {
		case errors.As(err, &ce) && ce.Code == websocket.CloseInternalServerErr && ce.Text != "":
			return -1, errors.New(ce.Text)
		case errors.As(err, &ce) && ce.Code == websocket.CloseAbnormalClosure:
			return -1, errors.New("exec: the connection to the agent was lost before the command exited")
		case errors.As(err, &ce):
			return -1, fmt.Errorf("exec: the agent closed the session (code %d) before the command exited", ce.Code)
		case err != nil:
			return -1, fmt.Errorf("exec: the connection to the agent was lost before the command exited: %w", err)
		}
		switch {
		case out.Exited && out.Result != nil:
			return out.Result.ExitCode, nil
		case out.Exited:
			return -1, errors.New("exec: the command exited without an exit code")
		case out.Stdout != nil && len(out.Stdout.Data) > 0:
			err = writeAll(stdout, out.Stdout.Data)
		case out.Stderr != nil && len(out.Stderr.Data) > 0:
			err = writeAll(stderr, out.Stderr.Data)
		}
		if err != nil {
			return -1, fmt.Errorf("exec: write output: %w", err)
		}
	}
}

func writeAll(w io.Writer, p []byte) error {
	_, err := w.Write(p)
	return err
}
