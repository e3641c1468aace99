package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/rpc"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/client"
	"github.com/droverhq/drover/client/allocrunner"
	"github.com/droverhq/drover/structs"
)

// noRoad is a backend that reaches no server and runs no client.
type noRoad struct{}

var errNoRoadTest = errors.New("no server")

func (noRoad) RPC(context.Context, string, any, any) error { return errNoRoadTest }
func (noRoad) StreamCall(context.Context, string, string, any) (net.Conn, error) {
	return nil, errNoRoadTest
}
func (noRoad) LocalNodeID() string  { return "" }
func (noRoad) Self() map[string]any { return nil }

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

// TestClientErrorStatus: the client's errors keep their codes over the
// wire and map to their HTTP status in one place.
func TestClientErrorStatus(t *testing.T) {
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
			wire := structs.DecodeRPCError(rpc.ServerError(structs.EncodeRPCError(fmt.Errorf("op: %w", tt.err))))
			rec := httptest.NewRecorder()
			(&httpAPI{logger: hclog.NewNullLogger()}).writeError(rec, httptest.NewRequest("GET", "/", nil), wire)
			if rec.Code != tt.want {
				t.Errorf("got %d, want %d", rec.Code, tt.want)
			}
		})
	}
}
