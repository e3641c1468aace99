package agent

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strings"

	"github.com/droverhq/drover/audit"
	"github.com/droverhq/drover/structs"
)

// auditRequest writes the audit line of a request that changed state (or
// tried to: any method but GET, HEAD and OPTIONS) or was denied. It
// names the token by its accessor, never its secret.
func (h *httpAPI) auditRequest(r *http.Request, status int) {
	if h.audit == nil {
		return
	}
	write := r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions || isExec(r)
	if !write && status != http.StatusForbidden {
		return
	}
	outcome := audit.OutcomeAllowed
	switch {
	case status == http.StatusForbidden || status == http.StatusUnauthorized:
		outcome = audit.OutcomeDenied
	case status >= 400:
		outcome = audit.OutcomeError
	}
	ns := r.URL.Query().Get("namespace")
	e := audit.Entry{
		Accessor: h.accessorOf(r), Remote: r.RemoteAddr, Method: r.Method, Path: r.URL.Path,
		Namespace: ns, Status: status, Outcome: outcome, RequestID: structs.GenerateUUID(),
	}
	if err := h.audit.Write(e); err != nil && !errors.Is(err, audit.ErrRotate) {
		h.logger.Error("audit: entry not written", "path", r.URL.Path, "error", err)
	}
}

// accessorOf names the request's token for the audit log: its accessor,
// "anonymous" without a token, "unknown" for a secret the servers do
// not know.
func (h *httpAPI) accessorOf(r *http.Request) string {
	if requestToken(r) == "" || !h.aclEnabled {
		return structs.AnonymousTokenID
	}
	e, err := h.resolveCached(r)
	if err != nil {
		return "unknown"
	}
	return e.accessor
}

// statusRecorder keeps the status a handler answered, passing flushes
// and hijacks (log follows, exec websockets) through.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("hijack: not supported")
	}
	if s.status == 0 {
		s.status = http.StatusSwitchingProtocols
	}
	return hj.Hijack()
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// simpleContentType reports whether a content type is one a browser page
// may send to another site without asking first (CORS "simple"): a
// write of that type must carry a token header, which such a page
// cannot add.
func simpleContentType(ct string) bool {
	ct = strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0]))
	return ct == "text/plain" || ct == "application/x-www-form-urlencoded" || ct == "multipart/form-data"
}
