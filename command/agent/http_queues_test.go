package agent

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// queueJobJSON is gpuJobJSON's job (1 GPU) in queue.
func queueJobJSON(id, queue string) string {
	return strings.Replace(gpuJobJSON(id, 1), `"Type": "batch"`, `"Type": "batch", "Queue": "`+queue+`"`, 1)
}

// TestQueueRoutes drives /v1/queue(s) on a dev agent (2 GPUs): writes,
// reads with usage and fair share, and a 4xx with a message for every
// bad request.
func TestQueueRoutes(t *testing.T) {
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
	steps := []struct {
		name, method, path, body string
		want                     int
		wantBody                 string // a substring of the answer
	}{
		{"queue", "PUT", "/v1/queue/research", `{"Description": "R&D", "Weight": 3, "GuaranteedGPUs": 1, "MaxGPUs": 2}`, 200, `"Index"`},
		{"queue with the default weight", "POST", "/v1/queue/batch", `{}`, 200, `"Index"`},
		{"read queue", "GET", "/v1/queue/research", "", 200, `"MaxGPUs":2`},
		{"default weight", "GET", "/v1/queue/batch", "", 200, `"Weight":1`},
		{"read default queue", "GET", "/v1/queue/default", "", 200, `"Name":"default"`},
		{"job in research", "PUT", "/v1/jobs", queueJobJSON("sweep", "research"), 200, `"EvalID"`},

		{"unknown queue", "GET", "/v1/queue/nope", "", 404, `queue "nope" not found`},
		{"malformed queue", "PUT", "/v1/queue/q", `{"Weight": `, 400, "not valid JSON"},
		{"weight 0", "PUT", "/v1/queue/q", `{"Weight": 0}`, 400, "weight 0: want 1 to 1000"},
		{"weight over 1000", "PUT", "/v1/queue/q", `{"Weight": 1001}`, 400, "weight 1001: want 1 to 1000"},
		{"max below guaranteed", "PUT", "/v1/queue/q", `{"GuaranteedGPUs": 4, "MaxGPUs": 2}`, 400, "max GPUs 2 is below the 4 guaranteed"},
		{"negative guarantee", "PUT", "/v1/queue/q", `{"GuaranteedGPUs": -1}`, 400, "must not be negative"},
		{"name mismatch", "PUT", "/v1/queue/q", `{"Name": "r"}`, 400, "does not match"},
		{"bad name", "PUT", "/v1/queue/no%20spaces", `{}`, 400, "letters, digits or dashes"},
		{"delete default", "DELETE", "/v1/queue/default", "", 400, "cannot be deleted"},
		{"delete queue in use", "DELETE", "/v1/queue/research", "", 400, "queue has jobs"},
		{"delete unknown queue", "DELETE", "/v1/queue/nope", "", 404, "not found"},
		{"job in an unknown queue", "PUT", "/v1/jobs", queueJobJSON("lost", "nope"), 400, `queue "nope" does not exist`},

		{"delete an unused queue", "DELETE", "/v1/queue/batch", "", 200, `"Index"`},
	}
	for _, st := range steps {
		code, body := do(st.method, st.path, st.body)
		if code != st.want || !strings.Contains(body, st.wantBody) {
			t.Errorf("%s: got %d %q, want %d with %q", st.name, code, strings.TrimSpace(body), st.want, st.wantBody)
		}
	}

	type status struct {
		Queue       struct{ Name string }
		Usage       struct{ GPUs float64 }
		Jobs        int
		FairShare   float64
		ClusterGPUs int
	}
	var list []status
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := do("GET", "/v1/queues", "")
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatalf("queues: %v: %s", err, body)
		}
		if len(list) == 2 && list[1].Usage.GPUs == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queues = %s, want default and research holding 1 GPU", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := list[1]; r.Queue.Name != "research" || r.Jobs != 1 || r.ClusterGPUs != 2 || r.FairShare != 2 {
		t.Errorf("research = %+v, want 1 job, fair share 2 of 2 GPUs", r)
	}
	if _, body := do("GET", "/v1/queues?prefix=def", ""); !strings.Contains(body, `"Name":"default"`) || strings.Contains(body, "research") {
		t.Errorf("queues?prefix=def = %s, want only default", body)
	}
}
