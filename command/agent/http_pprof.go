package agent

import (
	"bytes"
	"fmt"
	"net/http"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/droverhq/drover/acl"
)

// maxCPUProfile bounds ?seconds of a CPU profile.
const maxCPUProfile = 5 * time.Minute

// pprofRoutes serves the agent's Go profiles, as Nomad's
// /v1/agent/pprof/<profile>: with ACLs on they need agent write; with
// them off, enable_debug in the agent config (on in -dev).
func (h *httpAPI) pprofRoutes(m *routeMux) {
	m.HandleFunc("GET /v1/agent/pprof/{profile}", h.agentPprof)
}

func (h *httpAPI) agentPprof(w http.ResponseWriter, r *http.Request) {
	defer h.recoverPanic(w, r)
	if err := h.authorizePprof(r); err != nil {
		h.writeError(w, r, err)
		return
	}
	name := r.PathValue("profile")
	var out bytes.Buffer
	var err error
	if name == "profile" {
		err = h.cpuProfile(r, &out)
	} else {
		err = namedProfile(r, name, &out)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if r.URL.Query().Get("debug") == "" || r.URL.Query().Get("debug") == "0" {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
	} else {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	_, _ = w.Write(out.Bytes())
}

// authorizePprof: agent write with ACLs on; enable_debug without.
func (h *httpAPI) authorizePprof(r *http.Request) error {
	if h.aclEnabled {
		return h.authorizeAgent(r, (*acl.ACL).AllowAgentWrite)
	}
	if !h.enableDebug {
		return errorf(http.StatusForbidden, "%s: the agent's profiles need enable_debug = true in its config (or ACLs on and a token with agent write)", r.URL.Path)
	}
	return nil
}

// namedProfile writes one of runtime/pprof's profiles (goroutine, heap,
// allocs, threadcreate, block, mutex), ?debug=N as pprof's debug.
func namedProfile(r *http.Request, name string, out *bytes.Buffer) error {
	p := pprof.Lookup(name)
	if p == nil {
		return errorf(http.StatusNotFound, "profile %q: no such profile (want profile, goroutine, heap, allocs, threadcreate, block or mutex)", name)
	}
	debug := 0
	if v := r.URL.Query().Get("debug"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 2 {
			return errorf(http.StatusBadRequest, "debug %q: want 0, 1 or 2", v)
		}
		debug = n
	}
	if err := p.WriteTo(out, debug); err != nil {
		return fmt.Errorf("profile %s: %w", name, err)
	}
	return nil
}

// cpuProfile profiles the CPU for ?seconds (default 1, at most
// maxCPUProfile), or until the request ends.
func (h *httpAPI) cpuProfile(r *http.Request, out *bytes.Buffer) error {
	d := time.Second
	if v := r.URL.Query().Get("seconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || time.Duration(n)*time.Second > maxCPUProfile {
			return errorf(http.StatusBadRequest, "seconds %q: want 1 to %d", v, int(maxCPUProfile.Seconds()))
		}
		d = time.Duration(n) * time.Second
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		return errorf(http.StatusConflict, "cpu profile: %v", err)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
	pprof.StopCPUProfile()
	return nil
}
