package agent

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/structs"
)

// TestGPUHistoryHTTP: the node's and an allocation's GPU history answer
// through the servers; bad input is a 400 naming it.
func TestGPUHistoryHTTP(t *testing.T) {
	a, base := newTestAgent(t)
	req, _ := http.NewRequest("PUT", base+"/v1/jobs", strings.NewReader(sleepyGPUJob))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var alloc *structs.AllocListStub
	deadline := time.Now().Add(15 * time.Second)
	for alloc == nil {
		var list []*structs.AllocListStub
		getJSON(t, base+"/v1/job/gpu-sleep/allocations", &list)
		if len(list) == 1 && list[0].ClientStatus == structs.AllocClientStatusRunning {
			alloc = list[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no running allocation after 15s: %+v", list)
		}
		time.Sleep(50 * time.Millisecond)
	}

	var nh structs.GPUHistoryResponse
	if code := getJSON(t, base+"/v1/client/gpus/history?node_id="+a.client.NodeID()[:8], &nh); code != 200 {
		t.Fatalf("GET /v1/client/gpus/history: %d", code)
	}
	if nh.NodeID != a.client.NodeID() || len(nh.GPUs) != 2 || len(nh.GPUs[0].Samples) == 0 || nh.Interval != structs.DefaultGPUHistoryInterval || nh.Window != structs.DefaultGPUHistoryWindow {
		t.Errorf("node history: got node %q, %d GPUs, interval %v, window %v; want both GPUs sampled at the defaults", nh.NodeID, len(nh.GPUs), nh.Interval, nh.Window)
	}

	var ah structs.GPUHistoryResponse
	if code := getJSON(t, base+"/v1/client/allocation/"+alloc.ID[:8]+"/gpus/history?window=10m", &ah); code != 200 {
		t.Fatalf("GET allocation GPU history: %d", code)
	}
	if ah.AllocID != alloc.ID || len(ah.GPUs) != 1 || ah.Idle || ah.IdleWindow != structs.DefaultGPUIdleWindow || ah.IdleGPUs == nil {
		t.Errorf("allocation history: got %+v, want its one GPU, not idle, the default idle window", ah)
	}

	tests := []struct {
		name, path string
		want       int
		body       string
	}{
		{"bad window", "/v1/client/gpus/history?window=soon", 400, `window "soon" must be a positive duration`},
		{"negative window", "/v1/client/allocation/" + alloc.ID + "/gpus/history?window=-1m", 400, `window "-1m"`},
		{"unknown allocation", "/v1/client/allocation/0000dead-0000-0000-0000-000000000000/gpus/history", 404, ""},
		{"unknown node", "/v1/client/gpus/history?node_id=0000dead", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Get(base + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.want || !strings.Contains(string(body), tt.body) {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tt.want, tt.body)
			}
		})
	}

	// Without a client, the node must be named.
	h := newHTTPAPI(noRoad{}, hclog.NewNullLogger())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/client/gpus/history", nil))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "node_id") {
		t.Errorf("no client: got %d %q, want 400 naming node_id", rec.Code, rec.Body.String())
	}
}
