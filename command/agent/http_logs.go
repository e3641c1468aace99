package agent

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/droverhq/drover/structs"
)

// logs serves GET /v1/client/fs/logs/<alloc>?task=&type=&follow=&origin=&offset=&plain=
// for an allocation on any node. The answer is Nomad's framed stream
// (concatenated JSON StreamFrames, what the official client's
// AllocFS().Logs reads), or the raw bytes with ?plain=true. The log is
// read across the task's rotated files as one stream: offsets count
// bytes across the files that exist, origin=end counts back from the
// newest, and a follower moves on when the log rotates and stops when
// the task is dead and its log drained.
func (h *httpAPI) logs(w http.ResponseWriter, r *http.Request) {
	req, plain, err := h.logsRequest(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	conn, err := h.stream(r, structs.RPCClientAllocLogs, req)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	defer conn.Close()
	if plain {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		h.copyStream(w, r, conn, func(m *structs.StreamMsg) []byte {
			if m.Frame == nil {
				return nil
			}
			return m.Frame.Data
		})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	h.copyStream(w, r, conn, func(m *structs.StreamMsg) []byte {
		if m.Frame == nil {
			return nil
		}
		b, err := json.Marshal(m.Frame)
		if err != nil {
			return nil
		}
		return b
	})
}

// logsRequest reads the query of a logs request; plain reports ?plain.
func (h *httpAPI) logsRequest(r *http.Request) (req *structs.ClientLogsRequest, plain bool, err error) {
	q := r.URL.Query()
	req = &structs.ClientLogsRequest{Task: q.Get("task"), Origin: q.Get("origin")}
	switch q.Get("type") {
	case "", "stdout":
	case "stderr":
		req.Stderr = true
	default:
		return nil, false, errorf(http.StatusBadRequest, "type %q must be stdout or stderr", q.Get("type"))
	}
	for name, dst := range map[string]*bool{"follow": &req.Follow, "plain": &plain} {
		if v := q.Get(name); v != "" {
			if *dst, err = strconv.ParseBool(v); err != nil {
				return nil, false, errorf(http.StatusBadRequest, "%s %q must be true or false", name, v)
			}
		}
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, false, errorf(http.StatusBadRequest, "offset %q must be a non-negative number", v)
		}
		req.Offset = n
	}
	switch req.Origin {
	case "":
		req.Origin = "start"
	case "start", "end":
	default:
		return nil, false, errorf(http.StatusBadRequest, "origin %q must be start or end", req.Origin)
	}
	alloc, err := h.lookupAlloc(r, r.PathValue("alloc"))
	if err != nil {
		return nil, false, err
	}
	req.AllocID = alloc.ID
	if req.Task == "" {
		if req.Task, err = onlyTask(alloc); err != nil {
			return nil, false, err
		}
	}
	return req, plain, nil
}

// onlyTask returns the allocation's task when its group has exactly one.
func onlyTask(a *structs.Allocation) (string, error) {
	if a.Job == nil {
		return "", errorf(http.StatusBadRequest, "task is required")
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil || len(tg.Tasks) != 1 {
		return "", errorf(http.StatusBadRequest, "allocation %s has several tasks: name one with ?task=", structs.ShortID(a.ID))
	}
	return tg.Tasks[0].Name, nil
}
