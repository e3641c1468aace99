package agent

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/structs"
)

// TestStatsWithoutClient: node stats on an agent with no client need
// a node.
func TestStatsWithoutClient(t *testing.T) {
	h := newHTTPAPI(noRoad{}, hclog.NewNullLogger())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/client/stats", nil))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "node_id") {
		t.Errorf("got %d %q, want 400 naming node_id", rec.Code, rec.Body.String())
	}
}

const sleepyGPUJob = `{"Job": {"ID": "gpu-sleep", "Type": "batch", "Datacenters": ["dc1"],
  "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [{"Name": "t", "Driver": "raw_exec",
    "Config": {"command": "/bin/sleep", "args": ["30"]},
    "Resources": {"CPU": 100, "MemoryMB": 64, "Devices": [{"Name": "nvidia/gpu", "Count": 1}]}}]}]}}`

func getJSON(t *testing.T, url string, out any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return resp.StatusCode
}

func TestClientStats(t *testing.T) {
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
	var full structs.Allocation
	if code := getJSON(t, base+"/v1/allocation/"+alloc.ID, &full); code != 200 {
		t.Fatalf("GET allocation: %d", code)
	}
	gpu := full.DeviceIDs()
	if len(gpu) != 1 {
		t.Fatalf("allocation holds %v, want 1 GPU", gpu)
	}

	var ns structs.NodeStats
	if code := getJSON(t, base+"/v1/client/stats", &ns); code != 200 {
		t.Fatalf("GET /v1/client/stats: %d", code)
	}
	if ns.NodeID != a.client.NodeID() || ns.Host == nil || ns.Host.MemoryTotalBytes == 0 || len(ns.Devices) != 2 {
		t.Errorf("node stats: got node %q host %+v %d devices, want %q, host memory, 2 GPUs", ns.NodeID, ns.Host, len(ns.Devices), a.client.NodeID())
	}
	for _, d := range ns.Devices {
		if busy := d.ID == gpu[0]; !d.Simulated || busy != (d.GPUUtilPercent > 50) {
			t.Errorf("GPU %s (held %v): got %.1f%% simulated=%v", d.ID, busy, d.GPUUtilPercent, d.Simulated)
		}
	}

	tests := []struct {
		name, id string
		want     int
	}{
		{"full ID", alloc.ID, 200},
		{"prefix", alloc.ID[:8], 200},
		{"unknown", "0000dead-0000-0000-0000-000000000000", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var as structs.AllocStats
			code := getJSON(t, base+"/v1/client/allocation/"+tt.id+"/stats", &as)
			if code != tt.want {
				t.Fatalf("got %d, want %d", code, tt.want)
			}
			if code == 200 && (as.AllocID != alloc.ID || len(as.Devices) != 1 || as.Devices[0].ID != gpu[0]) {
				t.Errorf("got %+v, want allocation %s with GPU %s", as, alloc.ID, gpu[0])
			}
		})
	}
}
