// Package exectest serves the agent's side of the exec websocket
// (GET /v1/client/allocation/<id>/exec, Nomad's message shapes) for the
// tests of its callers: package api and the CLI. It runs no command: a
// test's script answers each session. It must not be imported outside
// tests.
package exectest

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/structs"
)

// Request is what the caller asked for.
type Request struct {
	AllocID string
	Task    string
	TTY     bool
	Command []string
	// Header is the request's HTTP header (what the caller sent).
	Header http.Header
	// Query is the whole query (namespace, region and the rest).
	Query map[string][]string
}

// Input is one message from the caller: stdin data, the end of stdin, or
// a terminal size.
type Input struct {
	Stdin       []byte
	StdinClosed bool
	Size        *structs.TerminalSize
}

// Session is the agent's side of one exec session.
type Session struct {
	Req  Request
	conn *websocket.Conn
}

type execIO struct {
	Data  []byte `json:"data,omitempty"`
	Close bool   `json:"close,omitempty"`
}

type execInput struct {
	Stdin   *execIO `json:"stdin,omitempty"`
	TTYSize *struct {
		Height int `json:"height"`
		Width  int `json:"width"`
	} `json:"tty_size,omitempty"`
}

// Next reads the caller's next message.
func (s *Session) Next() (Input, error) {
	var in execInput
	if err := s.conn.ReadJSON(&in); err != nil {
		return Input{}, err
	}
	var out Input
	if in.Stdin != nil {
		out.Stdin, out.StdinClosed = in.Stdin.Data, in.Stdin.Close
	}
	if in.TTYSize != nil {
		out.Size = &structs.TerminalSize{Height: uint16(in.TTYSize.Height), Width: uint16(in.TTYSize.Width)}
	}
	return out, nil
}

// ReadStdin reads messages until stdin ends and returns the input and
// the terminal sizes received meanwhile, in order.
func (s *Session) ReadStdin() ([]byte, []structs.TerminalSize, error) {
	var data []byte
	var sizes []structs.TerminalSize
	for {
		in, err := s.Next()
		if err != nil {
			return data, sizes, err
		}
		data = append(data, in.Stdin...)
		if in.Size != nil {
			sizes = append(sizes, *in.Size)
		}
		if in.StdinClosed {
			return data, sizes, nil
		}
	}
}

// Stdout sends output on the command's stdout.
func (s *Session) Stdout(p string) error {
	return s.conn.WriteJSON(map[string]any{"stdout": execIO{Data: []byte(p)}})
}

// Stderr sends output on the command's stderr.
func (s *Session) Stderr(p string) error {
	return s.conn.WriteJSON(map[string]any{"stderr": execIO{Data: []byte(p)}})
}

// Exit sends the command's exit code and closes the session normally,
// as the agent does.
func (s *Session) Exit(code int) error {
	msg := map[string]any{"exited": true, "result": map[string]int{"exit_code": code}}
	if err := s.conn.WriteJSON(msg); err != nil {
		return err
	}
	return s.Close(websocket.CloseNormalClosure, "")
}

// Fail ends the session with an error, as the agent does: close code
// 1011 with the error's text.
func (s *Session) Fail(text string) error {
	return s.Close(websocket.CloseInternalServerErr, text)
}

// Close sends a close message with code and text.
func (s *Session) Close(code int, text string) error {
	return s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
}

// Handler answers GET .../v1/client/allocation/<id>/exec by running
// script with the session; the connection is closed when script
// returns. A request without a valid command gets 400, as from the
// agent; anything else is upgraded.
func Handler(script func(*Session)) http.Handler {
	upgrader := websocket.Upgrader{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const prefix, suffix = "/v1/client/allocation/", "/exec"
		path := r.URL.Path
		i := strings.Index(path, prefix)
		if r.Method != http.MethodGet || i < 0 || !strings.HasSuffix(path, suffix) {
			http.Error(w, "no such route", http.StatusNotFound)
			return
		}
		q := r.URL.Query()
		req := Request{AllocID: path[i+len(prefix) : len(path)-len(suffix)], Task: q.Get("task"), TTY: q.Get("tty") == "true", Header: r.Header, Query: q}
		if err := json.Unmarshal([]byte(q.Get("command")), &req.Command); err != nil || len(req.Command) == 0 {
			http.Error(w, "command must be a JSON array of strings", http.StatusBadRequest)
			return
		}
		conn, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		script(&Session{Req: req, conn: conn})
	})
}
