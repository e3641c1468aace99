package command

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestAllocSignalCommand(t *testing.T) {
	f, addr := newFakeAgent(t)
	f.on("GET /v1/allocation/1a2b", testAllocs()[0])
	var bodies []string
	f.onFunc("PUT /v1/client/allocation/"+allocID1+"/signal", func(r *http.Request) (int, any) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		if strings.Contains(string(b), "SIGBOGUS") {
			return http.StatusBadRequest, `signal "SIGBOGUS": unknown signal`
		}
		return http.StatusOK, struct{}{}
	})
	tests := []struct {
		args     []string
		wantOut  string
		wantBody string
	}{
		{[]string{"1a2b"}, `Sent SIGKILL to all running tasks of allocation "1a2b3c4d"`, `{"Task":"","Signal":"SIGKILL"}`},
		{[]string{"-s", "SIGCONT", "1a2b", "main"}, `Sent SIGCONT to task "main" of allocation "1a2b3c4d"`, `{"Task":"main","Signal":"SIGCONT"}`},
		{[]string{"-task", "main", "-s", "hup", "1a2b"}, `Sent hup to task "main"`, `{"Task":"main","Signal":"hup"}`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			bodies = nil
			code, stdout, stderr := run(t, addr, append([]string{"alloc", "signal"}, tt.args...)...)
			if code != 0 || !strings.Contains(stdout, tt.wantOut) || len(bodies) != 1 || strings.TrimSpace(bodies[0]) != tt.wantBody {
				t.Errorf("exit %d, stdout %q, stderr %q, bodies %q; want 0, %q, %s", code, stdout, stderr, bodies, tt.wantOut, tt.wantBody)
			}
		})
	}
	errs := []struct {
		args []string
		want string
	}{
		{nil, "takes <alloc> and at most one task"},
		{[]string{"-task", "main", "1a2b", "main"}, "takes <alloc> and at most one task"},
		{[]string{"-s", "", "1a2b"}, "a signal name with -s"},
		{[]string{"1a2b", "nope"}, `has no task "nope"`},
		{[]string{"-s", "SIGBOGUS", "1a2b"}, `Error signalling allocation "1a2b3c4d": Unexpected response code: 400 (signal "SIGBOGUS": unknown signal)`},
		{[]string{"ffff"}, `Error reading allocation "ffff"`},
	}
	for _, tt := range errs {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := run(t, addr, append([]string{"alloc", "signal"}, tt.args...)...)
			if code != 1 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, tt.want)
			}
		})
	}
}
