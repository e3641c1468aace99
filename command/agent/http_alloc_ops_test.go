package agent

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/client"
	"github.com/droverhq/drover/client/allocrunner"
	"github.com/droverhq/drover/server/state"
)

// serverOnly is a backend without a client and without RestartAlloc.
type serverOnly struct{}

func (serverOnly) State() *state.StateStore                     { return nil }
func (serverOnly) RPC(string, any, any) error                   { return errors.New("no server") }
func (serverOnly) Leader() string                               { return "" }
func (serverOnly) Peers() []string                              { return nil }
func (serverOnly) LastContact() time.Duration                   { return 0 }
func (serverOnly) LogPath(string, string, bool) (string, error) { return "", errors.New("no client") }
func (serverOnly) Self() map[string]any                         { return nil }

func TestAllocRestartWithoutClient(t *testing.T) {
	h := newHTTPAPI(serverOnly{}, hclog.NewNullLogger())
	req := httptest.NewRequest("POST", "/v1/client/allocation/abc/restart", strings.NewReader(`{"TaskName": "t"}`))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotImplemented {
		t.Errorf("got %d %q, want 501", rec.Code, rec.Body.String())
	}
}

func TestAllocOpsErrors(t *testing.T) {
	_, base := newTestAgent(t)
	tests := []struct {
		method, path, body string
		want               int
	}{
		{"PUT", "/v1/allocation/nope/stop", "", 404},
		{"POST", "/v1/allocation/nope/stop", "", 404},
		{"GET", "/v1/allocation/nope/stop", "", 405},
		{"PUT", "/v1/client/allocation/nope/restart", `{"TaskName": "t"}`, 404},
		{"POST", "/v1/client/allocation/nope/restart", "", 404},
		{"PUT", "/v1/client/allocation/nope/restart", `{"TaskName":`, 400},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path+" "+tt.body, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("got %d (%s), want %d", resp.StatusCode, body, tt.want)
			}
		})
	}
}

func TestRestartErrorStatus(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{client.ErrUnknownAlloc, http.StatusNotFound},
		{allocrunner.ErrUnknownTask, http.StatusNotFound},
		{allocrunner.ErrTaskNotRunning, http.StatusConflict},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			var ce *codedError
			if got := restartError(tt.err); !errors.As(got, &ce) || ce.code != tt.want {
				t.Errorf("got %v, want status %d", got, tt.want)
			}
		})
	}
}
