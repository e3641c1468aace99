package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/structs"
)

// lockedBuffer collects an agent's log across goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newServerOnlyAgent starts an in-process agent with a server and no
// client, so registered jobs are stored and evaluated but never run, and
// logs into the returned buffer.
func newServerOnlyAgent(t *testing.T) (*Agent, string, *lockedBuffer) {
	t.Helper()
	cfg := DevConfig()
	cfg.Ports = &PortsConfig{}
	cfg.LogLevel = "WARN"
	cfg.Client.Enabled = false
	logs := &lockedBuffer{}
	a, base := startAgentConfig(t, cfg, logs)
	return a, base, logs
}

// startAgentConfig starts an agent with cfg (its data dir a fresh temp
// dir), logging to logOut, and waits for its server to have a leader.
func startAgentConfig(t *testing.T, cfg *Config, logOut io.Writer) (*Agent, string) {
	t.Helper()
	cfg.DataDir = drivertest.ReachableTempDir(t)
	a, err := NewAgent(cfg, logOut)
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
		resp, err := http.Get(base + "/v1/jobs")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a, base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent has no leader after 15s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// limitJob returns a job's JSON body with the group count, the device
// request and the task config given as raw JSON.
func limitJob(id, count, device, config string) string {
	return fmt.Sprintf(`{"Job": {"ID": %q, "Type": "batch", "Datacenters": ["dc1"],
  "TaskGroups": [{"Name": "g", "Count": %s, "Tasks": [{"Name": "t", "Driver": "raw_exec",
    "Config": %s, "Resources": {"CPU": 100, "MemoryMB": 64, "Devices": [%s]}}]}]}}`, id, count, config, device)
}

func nestedJSON(depth int) string {
	return `{"command": "/bin/true", "args": ` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + "}"
}

// TestLimitsRefused sends each over-the-limit job and checks for a 400
// naming the limit, and that nothing was stored.
func TestLimitsRefused(t *testing.T) {
	_, base, logs := newServerOnlyAgent(t)
	cmd := `{"command": "/bin/true"}`
	gpu := `{"Name": "nvidia/gpu", "Count": 1}`
	tests := []struct {
		name string
		body string
		want string
	}{
		{"count 1e9", limitJob("count", "1000000000", gpu, cmd), `group "g": count 1000000000 over the limit 10000 (limits.job_max_count)`},
		{"count 1e9 as a float", limitJob("countf", "1e9", gpu, cmd), "cannot unmarshal number 1e9"},
		{"gpu count 0", limitJob("gpu0", "1", `{"Name": "nvidia/gpu", "Count": 0}`, cmd), "count 0 under the minimum 1"},
		{"gpu count -1", limitJob("gpuneg", "1", `{"Name": "nvidia/gpu", "Count": -1}`, cmd), "cannot unmarshal number -1"},
		{"gpu count 2^63", limitJob("gpubig", "1", `{"Name": "nvidia/gpu", "Count": 9223372036854775808}`, cmd), "count 9223372036854775808 over the limit 1024 (limits.device_max_count)"},
		{"config 40 deep", limitJob("deep40", "1", gpu, nestedJSON(40)), "(limits.task_config_max_depth)"},
		{"config 1100 deep", limitJob("deep1100", "1", gpu, nestedJSON(1100)), "deeper than the limit 64 (limits.json_max_depth)"},
		{"null group", `{"Job": {"ID": "nullgroup", "Datacenters": ["dc1"], "TaskGroups": [null]}}`, "group 0: missing"},
		{"null task", `{"Job": {"ID": "nulltask", "TaskGroups": [{"Name": "g", "Tasks": [null]}]}}`, "task 0: missing"},
		{"null device", limitJob("nulldev", "1", "null", cmd), "device request: missing"},
		{"null spread", `{"Job": {"ID": "nullspread", "Spreads": [null], "TaskGroups": []}}`, "spread or spread target: missing"},
		{"2 MiB job", limitJob("big", "1", gpu, `{"command": "`+strings.Repeat("x", 2<<20)+`"}`), "over the limit 1048576 (limits.job_max_size)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := put(t, base+"/v1/jobs", tt.body)
			if code != http.StatusBadRequest || !strings.Contains(msg, tt.want) {
				t.Fatalf("PUT /v1/jobs = %d %q, want 400 with %q", code, msg, tt.want)
			}
		})
	}
	t.Run("20 MB body", func(t *testing.T) {
		body := limitJob("huge", "1", gpu, `{"command": "`+strings.Repeat("x", 20<<20)+`"}`)
		code, msg := put(t, base+"/v1/jobs", body)
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "(limits.http_max_body)") {
			t.Fatalf("PUT /v1/jobs = %d %q, want 413 naming limits.http_max_body", code, msg)
		}
	})
	t.Run("100000-deep HCL list", func(t *testing.T) {
		hcl := `job "deephcl" { group "g" { task "t" { driver = "raw_exec" config { args = ` +
			strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + " } } } }"
		body, _ := json.Marshal(map[string]string{"JobHCL": hcl})
		code, msg := put(t, base+"/v1/jobs/parse", string(body))
		if code != http.StatusBadRequest || !strings.Contains(msg, "input.hcl:1,") || !strings.Contains(msg, "(limits.hcl_max_depth)") {
			t.Fatalf("POST /v1/jobs/parse = %d %.300q, want 400 at input.hcl:1 naming limits.hcl_max_depth", code, msg)
		}
	})
	code, list := get(t, base+"/v1/jobs")
	if code != http.StatusOK || strings.TrimSpace(list) != "[]" {
		t.Fatalf("GET /v1/jobs = %d %.300q, want no jobs stored", code, list)
	}
	if strings.Contains(logs.String(), "panic") {
		t.Fatalf("agent log has a panic:\n%s", logs.String())
	}
}

// TestTaskConfigDepthOverRPC registers a job with a 1,100-deep task
// config through the server endpoint, as a client without the HTTP
// layer would: it is refused and not stored.
func TestTaskConfigDepthOverRPC(t *testing.T) {
	a, _, _ := newServerOnlyAgent(t)
	var cfg any = "x"
	for range 1100 {
		cfg = []any{cfg}
	}
	job := &structs.Job{ID: "deep", Type: structs.JobTypeBatch, Datacenters: []string{"dc1"}, TaskGroups: []*structs.TaskGroup{{
		Name: "g", Count: 1, Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"args": cfg}}},
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp structs.JobRegisterResponse
	err := a.RPC(ctx, structs.RPCJobRegister, &structs.JobRegisterRequest{Job: job}, &resp)
	if err == nil || !strings.Contains(err.Error(), "limits.task_config_max_depth") {
		t.Fatalf("Job.Register = %v, want limits.task_config_max_depth named", err)
	}
	var got structs.SingleJobResponse
	if err := a.RPC(ctx, structs.RPCJobGetJob, &structs.JobSpecificRequest{JobID: "deep"}, &got); !errors.Is(err, structs.ErrNotFound) || got.Job != nil {
		t.Fatalf("Job.GetJob = %v, %v; want no job stored", got.Job, err)
	}
}

func put(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
