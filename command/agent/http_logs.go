package agent

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/droverhq/drover/structs"
)

// logPollInterval is how often a followed log is checked for new data.
const logPollInterval = 100 * time.Millisecond

// logs serves GET /v1/client/fs/logs/<alloc>?task=&type=&follow=&origin=&offset=.
// Only plain output is produced (Nomad's framed encoding is not); the
// plain query parameter is accepted for compatibility. The task's log is
// read across its rotated files as one stream (see logReader): offsets
// count bytes across the files that exist, origin=end counts back from
// the newest, and a follower moves on when the task's log rotates.
func (h *httpAPI) logs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	allocID, task := r.PathValue("alloc"), q.Get("task")
	stream := q.Get("type")
	if stream == "" {
		stream = "stdout"
	}
	if stream != "stdout" && stream != "stderr" {
		h.writeError(w, r, errorf(http.StatusBadRequest, "type %q must be stdout or stderr", stream))
		return
	}
	follow, _ := strconv.ParseBool(q.Get("follow"))
	var offset int64
	if v := q.Get("offset"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			h.writeError(w, r, errorf(http.StatusBadRequest, "offset %q must be a non-negative number", v))
			return
		}
		offset = n
	}
	origin := q.Get("origin")
	if origin == "" {
		origin = "start"
	}
	if origin != "start" && origin != "end" {
		h.writeError(w, r, errorf(http.StatusBadRequest, "origin %q must be start or end", origin))
		return
	}
	alloc, err := h.findAlloc(allocID)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if task == "" {
		task, err = onlyTask(alloc)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
	}
	path, err := h.b.LogPath(alloc.ID, task, stream == "stderr")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	lr, err := openLog(r, path, follow, func() bool { return h.taskDead(alloc.ID, task) })
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	defer lr.close()
	pos := offset
	if origin == "end" {
		pos = max(0, lr.total-offset)
	}
	if err := lr.seek(pos); err != nil {
		h.writeError(w, r, errorf(http.StatusBadRequest, "seek: %v", err))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	// The log's size (all its rotated files) when the read began, so a
	// follower knows where the end is without probing (Drover).
	w.Header().Set("X-Drover-Log-Size", strconv.FormatInt(lr.total, 10))
	w.WriteHeader(http.StatusOK)
	h.copyLog(w, r, lr, alloc.ID, task, follow)
}

// copyLog writes the log to w, file after file; when following, it keeps
// writing new data, moving to the next file when the task's log
// rotates, until the task is dead and the log drained, or the client
// goes away.
func (h *httpAPI) copyLog(w http.ResponseWriter, r *http.Request, lr *logReader, allocID, task string, follow bool) {
	flusher, _ := w.(http.Flusher)
	ticker := time.NewTicker(logPollInterval)
	defer ticker.Stop()
	for {
		dead := !follow || h.taskDead(allocID, task)
		if _, err := io.Copy(w, lr.f); err != nil {
			return
		}
		moved, err := lr.next()
		if err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		if moved {
			continue
		}
		if dead {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-ticker.C:
		}
	}
}

func (h *httpAPI) findAlloc(id string) (*structs.Allocation, error) {
	st := h.b.State()
	if st == nil {
		return &structs.Allocation{ID: id}, nil
	}
	return resolve("allocation", id,
		func(id string) (*structs.Allocation, error) { return st.AllocByID(nil, id) },
		func(p string) ([]*structs.Allocation, error) { return st.AllocsByIDPrefix(nil, "*", p) },
		func(a *structs.Allocation) string { return a.ID })
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

// taskDead reports whether the task has finished, as the servers know it.
func (h *httpAPI) taskDead(allocID, task string) bool {
	st := h.b.State()
	if st == nil {
		return false
	}
	a, err := st.AllocByID(nil, allocID)
	if err != nil || a == nil {
		return true
	}
	if ts := a.TaskStates[task]; ts != nil && ts.State == structs.TaskStateDead {
		return true
	}
	return a.ClientTerminalStatus()
}
