package agent

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/structs"
)

// Exec limits.
const (
	// execMaxInput bounds one message from the exec client.
	execMaxInput = 1 << 20
	// execWriteTimeout bounds one write to the exec client.
	execWriteTimeout = 10 * time.Second
)

// execHandshakeTimeout bounds the wait for an exec websocket's token
// handshake.
const execHandshakeTimeout = 10 * time.Second

// execUpgrader upgrades exec requests to websockets. Its origin check is
// gorilla's default: a browser page of another origin cannot open one,
// so a site the user visits cannot run commands through a local agent.
var execUpgrader = websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 32 << 10}

// execInput and execOutput are Nomad's exec websocket messages
// (api.ExecStreamingInput, api.ExecStreamingOutput).
type execIO struct {
	Data  []byte `json:"data,omitempty"`
	Close bool   `json:"close,omitempty"`
}

type execInput struct {
	Stdin   *execIO `json:"stdin,omitempty"`
	TTYSize *struct {
		Height int `json:"height,omitempty"`
		Width  int `json:"width,omitempty"`
	} `json:"tty_size,omitempty"`
}

type execOutput struct {
	Stdout *execIO `json:"stdout,omitempty"`
	Stderr *execIO `json:"stderr,omitempty"`
	Exited bool    `json:"exited,omitempty"`
	Result *struct {
		ExitCode int `json:"exit_code"`
	} `json:"result,omitempty"`
}

// allocExec is GET /v1/client/allocation/<id>/exec?task=&tty=&command=["..."]:
// a websocket carrying Nomad's exec messages, to a task on any node.
// Nothing runs before the request is a websocket upgrade from a page of
// this agent's origin (or from no browser at all) and the upgrade is
// done; errors after it close the websocket with the error's text, as
// Nomad's do.
func (h *httpAPI) allocExec(w http.ResponseWriter, r *http.Request) {
	if crossOrigin(r) {
		h.writeError(w, r, errorf(http.StatusForbidden, "exec: cross-origin request from %s refused", r.Header.Get("Origin")))
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		h.writeError(w, r, errorf(http.StatusBadRequest, "exec: want a websocket upgrade (Connection: Upgrade, Upgrade: websocket)"))
		return
	}
	handshake := r.URL.Query().Get("ws_handshake") == "true"
	var req *structs.ClientExecRequest
	if !handshake {
		var err error
		if req, err = h.execRequest(r); err != nil {
			h.writeError(w, r, err)
			return
		}
	}
	ws, err := execUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade answered the client (a foreign origin gets 403)
	}
	defer ws.Close()
	ws.SetReadLimit(execMaxInput)
	if handshake {
		// A browser cannot set headers on a websocket: with
		// ?ws_handshake=true the first message carries the token, as
		// Nomad's UI sends it ({"version": 1, "auth_token": "..."}).
		var hs struct {
			Version   int    `json:"version"`
			AuthToken string `json:"auth_token"`
		}
		_ = ws.SetReadDeadline(time.Now().Add(execHandshakeTimeout))
		if err := ws.ReadJSON(&hs); err != nil || hs.Version != 1 {
			closeWS(ws, websocket.ClosePolicyViolation, "exec: want the handshake {\"version\": 1, \"auth_token\": \"...\"} first")
			return
		}
		_ = ws.SetReadDeadline(time.Time{})
		if hs.AuthToken != "" {
			r.Header.Set("X-Nomad-Token", hs.AuthToken)
		}
		if req, err = h.execRequest(r); err != nil {
			closeWS(ws, websocket.CloseInternalServerErr, err.Error())
			return
		}
	}
	conn, err := h.stream(r, structs.RPCClientAllocExec, req)
	if err != nil {
		closeWS(ws, websocket.CloseInternalServerErr, err.Error())
		return
	}
	defer conn.Close()
	done := make(chan struct{})
	// The input goroutine ends when the websocket or the stream does;
	// both are closed here, and it is waited for.
	defer func() { ws.Close(); conn.Close(); <-done }()
	go func() {
		defer close(done)
		defer conn.Close()
		for {
			var in execInput
			if err := ws.ReadJSON(&in); err != nil {
				return
			}
			m := &structs.StreamMsg{}
			if in.Stdin != nil {
				m.Stdin, m.StdinClosed = in.Stdin.Data, in.Stdin.Close
			}
			if s := in.TTYSize; s != nil && s.Height > 0 && s.Width > 0 && s.Height <= 1<<15 && s.Width <= 1<<15 {
				m.TTYSize = &structs.TerminalSize{Height: uint16(s.Height), Width: uint16(s.Width)}
			}
			if err := structs.WriteStreamMsg(conn, m); err != nil {
				return
			}
		}
	}()
	for {
		var m structs.StreamMsg
		if err := structs.ReadStreamMsg(conn, &m); err != nil {
			closeWS(ws, websocket.CloseInternalServerErr, "exec: the task's node went away")
			return
		}
		var out execOutput
		switch {
		case m.Error != "":
			closeWS(ws, websocket.CloseInternalServerErr, structs.DecodeRPCErrorText(m.Error).Error())
			return
		case m.Exited:
			out.Exited = true
			out.Result = &struct {
				ExitCode int `json:"exit_code"`
			}{ExitCode: m.ExitCode}
		case len(m.Stdout) > 0:
			out.Stdout = &execIO{Data: m.Stdout}
		case len(m.Stderr) > 0:
			out.Stderr = &execIO{Data: m.Stderr}
		default:
			continue
		}
		_ = ws.SetWriteDeadline(time.Now().Add(execWriteTimeout))
		if err := ws.WriteJSON(&out); err != nil {
			return
		}
		if m.Exited {
			closeWS(ws, websocket.CloseNormalClosure, "")
			return
		}
	}
}

// closeWS sends a close message with code and text.
func closeWS(ws *websocket.Conn, code int, text string) {
	if len(text) > 120 { // a control frame carries at most 125 bytes
		text = text[:120]
	}
	_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
}

// execRequest reads ?task, ?tty and ?command (a JSON array of strings).
func (h *httpAPI) execRequest(r *http.Request) (*structs.ClientExecRequest, error) {
	q := r.URL.Query()
	req := &structs.ClientExecRequest{Task: q.Get("task")}
	if v := q.Get("tty"); v != "" {
		tty, err := strconv.ParseBool(v)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "tty %q must be true or false", v)
		}
		req.TTY = tty
	}
	if err := json.Unmarshal([]byte(q.Get("command")), &req.Command); err != nil || len(req.Command) == 0 || req.Command[0] == "" {
		return nil, errorf(http.StatusBadRequest, `command must be a JSON array of strings, such as ["/bin/sh", "-c", "echo hi"]`)
	}
	alloc, err := h.lookupAlloc(r, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	req.AllocID = alloc.ID
	if req.Task == "" {
		if req.Task, err = onlyTask(alloc); err != nil {
			return nil, err
		}
	}
	return req, nil
}
