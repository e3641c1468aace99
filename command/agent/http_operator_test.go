package agent

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// doJSON sends body with method to url and returns the status, the body
// and the X-Nomad-Index header.
func doJSON(t *testing.T, method, url, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(out), resp.Header.Get("X-Nomad-Index")
}

// TestSchedulerConfiguration walks GET and PUT
// /v1/operator/scheduler/configuration through a real agent: the
// default, a change, check-and-set, and refused bodies.
func TestSchedulerConfiguration(t *testing.T) {
	_, base := newTestAgent(t)
	url := base + "/v1/operator/scheduler/configuration"

	read := func(t *testing.T) (structs.SchedulerConfigurationResponse, string) {
		t.Helper()
		code, body, index := doJSON(t, "GET", url, "")
		if code != http.StatusOK {
			t.Fatalf("GET: got %d %q, want 200", code, body)
		}
		var out structs.SchedulerConfigurationResponse
		if err := json.Unmarshal([]byte(body), &out); err != nil || out.SchedulerConfig == nil {
			t.Fatalf("GET: got body %q (%v), want {\"SchedulerConfig\": {...}}", body, err)
		}
		return out, index
	}
	write := func(t *testing.T, query, body string) structs.SchedulerSetConfigurationResponse {
		t.Helper()
		code, out, _ := doJSON(t, "PUT", url+query, body)
		if code != http.StatusOK {
			t.Fatalf("PUT %s: got %d %q, want 200", body, code, out)
		}
		var resp structs.SchedulerSetConfigurationResponse
		if err := json.Unmarshal([]byte(out), &resp); err != nil {
			t.Fatalf("PUT: got body %q: %v", out, err)
		}
		return resp
	}

	first, _ := read(t)
	if got := first.SchedulerConfig.SchedulerAlgorithm; got != structs.DefaultSchedulerAlgorithm {
		t.Errorf("default: got algorithm %q, want %q", got, structs.DefaultSchedulerAlgorithm)
	}

	// Nomad clients send fields Drover does not have; they are ignored.
	set := write(t, "", `{"SchedulerAlgorithm": "spread", "MemoryOversubscriptionEnabled": false}`)
	if !set.Updated || set.Index == 0 {
		t.Fatalf("set: got %+v, want Updated true and an index", set)
	}
	got, header := read(t)
	want := structs.SchedulerConfiguration{SchedulerAlgorithm: "spread", CreateIndex: set.Index, ModifyIndex: set.Index}
	if *got.SchedulerConfig != want || got.Index != set.Index || header != strconv.FormatUint(got.SchedulerConfig.ModifyIndex, 10) {
		t.Errorf("after set: got %+v index %d header %q, want %+v at index %d", *got.SchedulerConfig, got.Index, header, want, set.Index)
	}

	stale := write(t, "?cas=1", `{"SchedulerAlgorithm": "binpack"}`)
	if stale.Updated {
		t.Errorf("stale cas: got Updated true, want false")
	}
	current := write(t, "?cas="+strconv.FormatUint(got.SchedulerConfig.ModifyIndex, 10), `{"SchedulerAlgorithm": "binpack"}`)
	if !current.Updated {
		t.Errorf("current cas: got Updated false, want true")
	}
	if after, _ := read(t); after.SchedulerConfig.SchedulerAlgorithm != "binpack" {
		t.Errorf("after cas: got algorithm %q, want binpack", after.SchedulerConfig.SchedulerAlgorithm)
	}
}

func TestSchedulerConfigurationRefused(t *testing.T) {
	_, base := newTestAgent(t)
	url := base + "/v1/operator/scheduler/configuration"
	tests := []struct {
		name, method, query, body string
		wantCode                  int
		wantBody                  string
	}{
		{name: "unknown algorithm", method: "PUT", body: `{"SchedulerAlgorithm": "worstfit"}`, wantCode: 400,
			wantBody: `SchedulerAlgorithm "worstfit" is not one of binpack, spread, fgd`},
		{name: "algorithm not a string", method: "PUT", body: `{"SchedulerAlgorithm": 3}`, wantCode: 400,
			wantBody: "SchedulerAlgorithm"},
		{name: "not JSON", method: "POST", body: `{"SchedulerAlgorithm":`, wantCode: 400, wantBody: "not valid JSON"},
		{name: "bad cas", method: "PUT", query: "?cas=soon", body: `{"SchedulerAlgorithm": "spread"}`, wantCode: 400, wantBody: `cas "soon"`},
		{name: "delete", method: "DELETE", wantCode: 405, wantBody: "method not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := doJSON(t, tt.method, url+tt.query, tt.body)
			if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
				t.Errorf("got %d %q, want %d with %q", code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
	code, body, _ := doJSON(t, "GET", url, "")
	if code != http.StatusOK || !strings.Contains(body, `"SchedulerAlgorithm":"fgd"`) {
		t.Errorf("after refused writes: got %d %q, want the default configuration", code, body)
	}
}
