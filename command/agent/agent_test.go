package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/structs"
)

// newTestAgent starts an in-process dev agent on loopback ports chosen by
// the kernel.
func newTestAgent(t *testing.T) (*Agent, string) {
	t.Helper()
	cfg := DevConfig()
	cfg.Ports = &PortsConfig{HTTP: 0, RPC: 0, Serf: 0}
	cfg.DataDir = drivertest.ReachableTempDir(t)
	cfg.LogLevel = "WARN"
	cfg.DevGPUs = 2
	a, err := NewAgent(cfg, io.Discard)
	if err != nil {
		t.Fatalf("start agent: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	base := "http://" + a.HTTPAddr()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(base + "/v1/nodes")
		if err == nil {
			var nodes []map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&nodes)
			resp.Body.Close()
			if len(nodes) == 1 && nodes[0]["Status"] == "ready" {
				return a, base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent has no ready node after 15s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const blockingJob = `{"Job": {"ID": "sleepy", "Type": "batch", "Datacenters": ["dc1"],
  "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [{"Name": "t", "Driver": "raw_exec",
    "Config": {"command": "/bin/true"}}]}]}}`

// TestBlockingQuery checks that a read with ?index= waits for a change and
// answers the X-Nomad-* headers Nomad clients need.
func TestBlockingQuery(t *testing.T) {
	_, base := newTestAgent(t)

	resp, err := http.Get(base + "/v1/jobs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, h := range []string{"X-Nomad-Index", "X-Nomad-KnownLeader", "X-Nomad-LastContact"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("GET /v1/jobs: missing header %s", h)
		}
	}
	if got := resp.Header.Get("X-Nomad-KnownLeader"); got != "true" {
		t.Errorf("X-Nomad-KnownLeader: got %q, want true", got)
	}
	index, err := strconv.ParseUint(resp.Header.Get("X-Nomad-Index"), 10, 64)
	if err != nil || index == 0 {
		t.Fatalf("X-Nomad-Index: got %q", resp.Header.Get("X-Nomad-Index"))
	}

	// A blocking read at the current index with a short wait times out
	// with the same index and an empty list.
	start := time.Now()
	resp, err = http.Get(base + "/v1/jobs?index=" + strconv.FormatUint(index, 10) + "&wait=300ms")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Errorf("blocking read returned after %v, want it to wait about 300ms", waited)
	}
	if strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("timed-out read: got %s, want []", body)
	}

	// A blocking read wakes when a job is registered.
	type result struct {
		body  string
		index string
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Get(base + "/v1/jobs?index=" + strconv.FormatUint(index, 10) + "&wait=20s")
		if err != nil {
			done <- result{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- result{body: string(b), index: resp.Header.Get("X-Nomad-Index")}
	}()
	time.Sleep(100 * time.Millisecond) // let the read start blocking
	req, _ := http.NewRequest(http.MethodPut, base+"/v1/jobs", bytes.NewBufferString(blockingJob))
	put, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	put.Body.Close()
	if put.StatusCode != 200 {
		t.Fatalf("register: status %d", put.StatusCode)
	}
	select {
	case r := <-done:
		if !strings.Contains(r.body, `"ID":"sleepy"`) {
			t.Errorf("woken read: got %s, want the new job", r.body)
		}
		if got, _ := strconv.ParseUint(r.index, 10, 64); got <= index {
			t.Errorf("woken read index: got %s, want > %d", r.index, index)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking read did not wake within 10s of a registration")
	}
}

func TestUnknownIDsAndMethods(t *testing.T) {
	_, base := newTestAgent(t)
	tests := []struct {
		method, path string
		want         int
	}{
		{"GET", "/v1/job/nope", 404},
		{"GET", "/v1/job/nope/summary", 404},
		{"GET", "/v1/allocation/nope", 404},
		{"GET", "/v1/client/fs/logs/nope?task=t", 404},
		{"GET", "/v1/client/fs/logs/x?type=stdin", 400},
		{"PATCH", "/v1/jobs", 405},
		{"POST", "/v1/nodes", 405},
		{"GET", "/v1/nothing-here", 404},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, base+tt.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("got %d (%s), want %d", resp.StatusCode, body, tt.want)
			}
			if len(bytes.TrimSpace(body)) == 0 {
				t.Errorf("empty error body")
			}
		})
	}
}

func TestScaleAndGPUs(t *testing.T) {
	_, base := newTestAgent(t)
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do("PUT", "/v1/jobs", blockingJob); code != 200 {
		t.Fatalf("register: %d %s", code, body)
	}
	tests := []struct {
		name, body string
		want       int
	}{
		{"no count", `{"Target": {"Group": "g"}}`, 400},
		{"negative", `{"Count": -1, "Target": {"Group": "g"}}`, 400},
		{"unknown group", `{"Count": 2, "Target": {"Group": "nope"}}`, 400},
		{"scale up", `{"Count": 3, "Target": {"Group": "g"}}`, 200},
	}
	for _, tt := range tests {
		if code, body := do("POST", "/v1/job/sleepy/scale", tt.body); code != tt.want {
			t.Errorf("%s: got %d (%s), want %d", tt.name, code, body, tt.want)
		}
	}
	if code, _ := do("POST", "/v1/job/nope/scale", `{"Count": 1, "Target": {"Group": "g"}}`); code != 404 {
		t.Errorf("unknown job: got %d, want 404", code)
	}
	var job struct{ TaskGroups []struct{ Count int } }
	_, body := do("GET", "/v1/job/sleepy", "")
	if err := json.Unmarshal([]byte(body), &job); err != nil || len(job.TaskGroups) != 1 || job.TaskGroups[0].Count != 3 {
		t.Errorf("after scale: got %s, want count 3", body)
	}

	var sum structs.GPUSummary
	_, body = do("GET", "/v1/gpus", "")
	if err := json.Unmarshal([]byte(body), &sum); err != nil {
		t.Fatalf("gpus: %v: %s", err, body)
	}
	if sum.Total != 2 || len(sum.Nodes) != 1 || sum.Nodes[0].GPUs != 2 || sum.Free+sum.Allocated != 2 {
		t.Errorf("gpus: got %+v, want the dev node's 2 simulated GPUs", sum)
	}
}

func gpuJobJSON(id string, gpus int) string {
	return `{"Job": {"ID": "` + id + `", "Type": "batch", "Datacenters": ["dc1"],
  "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [{"Name": "t", "Driver": "raw_exec",
    "Config": {"command": "/bin/true"},
    "Resources": {"CPU": 100, "MemoryMB": 64, "Devices": [{"Name": "nvidia/gpu", "Count": ` + strconv.Itoa(gpus) + `}]}}]}]}}`
}

// gpuPlanJSON is gpuJobJSON as a plan request asking for the diff.
func gpuPlanJSON(id string, gpus int) string {
	s := gpuJobJSON(id, gpus)
	return s[:len(s)-1] + `, "Diff": true}`
}

// TestJobPlan checks the dry run: placements with GPUs, failures with
// reasons, and nothing written.
func TestJobPlan(t *testing.T) {
	_, base := newTestAgent(t)
	plan := func(id string, gpus int) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("PUT", base+"/v1/job/"+id+"/plan", strings.NewReader(gpuPlanJSON(id, gpus)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, fits := plan("fits", 2)
	if code != 200 {
		t.Fatalf("plan fits: status %d: %v", code, fits)
	}
	placements, _ := fits["Placements"].([]any)
	if len(placements) != 1 {
		t.Fatalf("plan fits: got placements %v, want 1", fits["Placements"])
	}
	if gpus, _ := placements[0].(map[string]any)["GPUs"].([]any); len(gpus) != 2 {
		t.Errorf("plan fits: placement GPUs %v, want 2", gpus)
	}
	if d, _ := fits["Diff"].(map[string]any); d["Type"] != "Added" {
		t.Errorf("plan fits: diff %v, want Added", fits["Diff"])
	}
	if fits["FailedTGAllocs"] != nil {
		t.Errorf("plan fits: unexpected failures %v", fits["FailedTGAllocs"])
	}

	code, tooBig := plan("too-big", 3)
	if p, ok := tooBig["Placements"].([]any); code != 200 || !ok || len(p) != 0 {
		t.Fatalf("plan too-big: status %d, %v", code, tooBig)
	}
	failed, _ := tooBig["FailedTGAllocs"].(map[string]any)
	if !strings.Contains(fmt.Sprint(failed["g"]), "need 3") {
		t.Errorf("plan too-big: failures %v, want the GPU shortfall", failed)
	}

	// Nothing was registered or placed by either dry run.
	for _, path := range []string{"/v1/job/fits", "/v1/job/too-big"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("GET %s after plan: status %d, want 404", path, resp.StatusCode)
		}
	}
	resp, err := http.Get(base + "/v1/allocations")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(b)) != "[]" {
		t.Errorf("allocations after plans: got %s, want none", b)
	}
}

// TestFollowLogOfTaskThatNeverStarted: following the log of a task that
// failed to start answers once the task is dead, instead of waiting.
func TestFollowLogOfTaskThatNeverStarted(t *testing.T) {
	_, base := newTestAgent(t)
	job := strings.Replace(blockingJob, `"/bin/true"`, `"/no/such/binary"`, 1)
	req, _ := http.NewRequest("PUT", base+"/v1/jobs", strings.NewReader(job))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var allocID string
	deadline := time.Now().Add(15 * time.Second)
	for allocID == "" {
		var allocs []struct{ ID, ClientStatus string }
		r, err := http.Get(base + "/v1/job/sleepy/allocations")
		if err == nil {
			_ = json.NewDecoder(r.Body).Decode(&allocs)
			r.Body.Close()
		}
		if len(allocs) > 0 && allocs[0].ClientStatus == "failed" {
			allocID = allocs[0].ID
		}
		if time.Now().After(deadline) {
			t.Fatal("no failed allocation after 15s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	r, err := c.Get(base + "/v1/client/fs/logs/" + allocID + "?task=t&type=stdout&follow=true&plain=true")
	if err != nil {
		t.Fatalf("follow logs of a dead task: %v", err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 && r.StatusCode != 404 {
		t.Errorf("follow logs of a dead task: status %d (%s), want 200 or 404", r.StatusCode, body)
	}
}
