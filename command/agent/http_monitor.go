package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
	"github.com/hashicorp/go-hclog"
)

// monitorBuffer is how many log lines a monitor request holds for a slow
// reader; past it, lines are dropped and counted, never waited for.
const monitorBuffer = 512

// logSinks is what /v1/agent/monitor needs of the agent's logger: sinks
// registered for the length of a request (hclog's InterceptLogger).
type logSinks interface {
	RegisterSink(hclog.SinkAdapter)
	DeregisterSink(hclog.SinkAdapter)
}

// lineBuffer is a monitor's sink output: each write (one formatted log
// line) is copied into a bounded queue, or dropped and counted when the
// queue is full. It never blocks: the logger calls it with its lock held.
type lineBuffer struct {
	lines   chan []byte
	dropped atomic.Int64
}

func newLineBuffer(n int) *lineBuffer { return &lineBuffer{lines: make(chan []byte, n)} }

func (b *lineBuffer) Write(p []byte) (int, error) {
	select {
	case b.lines <- append([]byte(nil), p...):
	default:
		b.dropped.Add(1)
	}
	return len(p), nil
}

// maxMonitors bounds the /v1/agent/monitor streams open at once: each
// formats every line the agent logs, under the logger's lock.
const maxMonitors = 8

// monitorRoutes serves the agent's own log stream.
func (h *httpAPI) monitorRoutes(m *routeMux) {
	m.HandleFunc("GET /v1/agent/monitor", h.agentMonitor)
}

// monitorRequest is a monitor request's query: Nomad's log_level,
// log_json, node_id, server_id, plain.
type monitorRequest struct {
	level hclog.Level
	json  bool
	plain bool
}

// agentMonitor streams the agent's log lines at log_level (default info)
// and above from now until the request ends, as Nomad's framed stream
// (concatenated JSON StreamFrames, what Nomad's Agent().Monitor reads)
// or, with ?plain=true, as text. A reader slower than the agent logs
// loses lines, never stalls the agent: after each line written, the
// lines dropped since are reported in a line of their own.
func (h *httpAPI) agentMonitor(w http.ResponseWriter, r *http.Request) {
	defer h.recoverPanic(w, r)
	err := h.authorizeAgent(r, (*acl.ACL).AllowAgentRead)
	var req monitorRequest
	if err == nil {
		req, err = h.monitorRequest(r)
	}
	if err == nil && h.logSinks == nil {
		err = errorf(http.StatusNotImplemented, "monitor: this agent's logger takes no sinks")
	}
	if err == nil {
		if n := h.monitors.Add(1); n > maxMonitors {
			err = errorf(http.StatusTooManyRequests, "monitor: %d log streams already open on this agent, the most it serves at once", maxMonitors)
		}
		defer h.monitors.Add(-1)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	buf := newLineBuffer(h.monitorBufferSize())
	sink := hclog.NewSinkAdapter(&hclog.LoggerOptions{Level: req.level, JSONFormat: req.json, Output: buf})
	h.logSinks.RegisterSink(sink)
	defer h.logSinks.DeregisterSink(sink)

	if req.plain {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case line := <-buf.lines:
			if n := buf.dropped.Swap(0); n > 0 {
				line = append(line, droppedNotice(n, req.json)...)
			}
			if err := writeMonitorLine(w, line, req.plain); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// droppedNotice is the line saying n lines were dropped, in the
// stream's format (hclog's JSON with log_json).
func droppedNotice(n int64, asJSON bool) []byte {
	msg := fmt.Sprintf("monitor: dropped %d log lines: the reader is slower than the agent logs", n)
	if asJSON {
		b, _ := json.Marshal(map[string]any{"@level": "warn", "@message": msg, "@timestamp": time.Now().Format("2006-01-02T15:04:05.000000Z07:00"), "dropped": n})
		return append(b, '\n')
	}
	return []byte("[WARN]  " + msg + "\n")
}

// writeMonitorLine writes line as text or as one StreamFrame.
func writeMonitorLine(w http.ResponseWriter, line []byte, plain bool) error {
	if !plain {
		var err error
		if line, err = json.Marshal(&structs.StreamFrame{Data: line}); err != nil {
			return err
		}
	}
	_, err := w.Write(line)
	return err
}

func (h *httpAPI) monitorBufferSize() int {
	if h.monitorLines > 0 {
		return h.monitorLines
	}
	return monitorBuffer
}

// monitorRequest reads and checks a monitor request's query. Only this
// agent's own log can be streamed yet: node_id or server_id naming
// another agent is a 400 saying so.
func (h *httpAPI) monitorRequest(r *http.Request) (monitorRequest, error) {
	q := r.URL.Query()
	req := monitorRequest{level: hclog.Info}
	if v := q.Get("log_level"); v != "" {
		req.level = hclog.LevelFromString(v)
		if req.level == hclog.NoLevel || req.level == hclog.Off {
			return req, errorf(http.StatusBadRequest, "log_level %q: want trace, debug, info, warn or error", v)
		}
	}
	for name, dst := range map[string]*bool{"log_json": &req.json, "plain": &req.plain} {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return req, errorf(http.StatusBadRequest, "%s %q: want true or false", name, v)
			}
			*dst = b
		}
	}
	if id := q.Get("node_id"); id != "" {
		local := h.b.LocalNodeID()
		if local == "" || (id != local && !(len(id) >= 8 && strings.HasPrefix(local, id))) {
			return req, errorf(http.StatusBadRequest, "node_id %q: only this agent's own log can be monitored yet (its node is %q); ask the agent of that node", id, local)
		}
	}
	if id := q.Get("server_id"); id != "" && !h.isLocalServer(id) {
		return req, errorf(http.StatusBadRequest, "server_id %q: only this agent's own log can be monitored yet; ask that server's agent", id)
	}
	return req, nil
}

// isLocalServer reports whether id names this agent's server: its name,
// or "leader" when it leads.
func (h *httpAPI) isLocalServer(id string) bool {
	self := h.b.Self()
	stats, _ := self["stats"].(map[string]map[string]string)
	if stats["agent"]["server"] != "true" {
		return false
	}
	if id == "leader" {
		return stats["nomad"]["leader"] == "true"
	}
	member, _ := self["member"].(map[string]any)
	name, _ := member["Name"].(string)
	return name != "" && (id == name || strings.HasPrefix(id, name+"."))
}
