package agent

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/droverhq/drover/server"
	"github.com/droverhq/drover/structs"
)

// maxEventTopics bounds the topic parameters of one event stream request
// (the servers check the topic:key pairs again).
const maxEventTopics = 64

func (h *httpAPI) eventRoutes(m *routeMux) {
	m.HandleFunc("GET /v1/event/stream", h.eventStream)
}

// eventStream serves GET /v1/event/stream?topic=Job:id&namespace=&index=
// as Nomad does: newline-delimited JSON frames {"Index":N,"Events":[...]}
// flushed one by one, and {} as a heartbeat every 10 s. Any agent
// serves it: a server from its own event buffer, a client-only agent
// through the server it is connected to. The stream ends when the caller
// goes; an error after it began ends it with a last line
// {"Error":"..."}.
func (h *httpAPI) eventStream(w http.ResponseWriter, r *http.Request) {
	req, err := eventStreamRequest(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	conn, err := h.stream(r, structs.RPCEventStream, req)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	defer conn.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	for {
		var m structs.StreamMsg
		if err := structs.ReadStreamMsg(conn, &m); err != nil {
			if !errors.Is(err, io.EOF) && r.Context().Err() == nil {
				h.logger.Debug("http: event stream", "error", err)
			}
			return
		}
		line := append(m.Data, '\n')
		if m.Error != "" {
			line = errorLine(structs.DecodeRPCErrorText(m.Error))
		}
		if _, err := w.Write(line); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		if m.Error != "" {
			return
		}
	}
}

// errorLine is the last line of a stream that ended with err.
func errorLine(err error) []byte {
	return append(strconv.AppendQuote([]byte(`{"Error":`), err.Error()), '}', '\n')
}

// eventStreamRequest reads the query of an event stream request: topic
// (repeatable; "Job", "Job:*" or "Job:<key>", "*" for all), namespace
// (default "default", "*" for every namespace the token may read) and
// index (resume after it).
func eventStreamRequest(r *http.Request) (*structs.EventStreamRequest, error) {
	q := r.URL.Query()
	req := &structs.EventStreamRequest{Namespace: q.Get("namespace")}
	if v := q.Get("index"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "index %q must be a non-negative number", v)
		}
		req.Index = n
	}
	topics := q["topic"]
	if len(topics) > maxEventTopics {
		return nil, errorf(http.StatusBadRequest, "%d topic parameters: the limit is %d", len(topics), maxEventTopics)
	}
	if len(topics) > 0 {
		req.Topics = map[string][]string{}
	}
	for _, t := range topics {
		topic, key, _ := strings.Cut(t, ":")
		if topic == "" {
			return nil, errorf(http.StatusBadRequest, "topic %q: want Topic or Topic:key", t)
		}
		if key == "" {
			key = "*"
		}
		req.Topics[topic] = append(req.Topics[topic], key)
	}
	return req, nil
}

// eventsConfig is the server block's event stream sizes; negative ones
// are refused.
func (s *ServerConfig) eventsConfig() (server.EventsConfig, error) {
	if s.EventBufferSize < 0 || s.EventMaxSubscriptions < 0 {
		return server.EventsConfig{}, fmt.Errorf("server: event_buffer_size %d and event_max_subscriptions %d must not be negative",
			s.EventBufferSize, s.EventMaxSubscriptions)
	}
	return server.EventsConfig{BufferSize: s.EventBufferSize, MaxSubscriptions: s.EventMaxSubscriptions}, nil
}
