package command

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/droverhq/drover/structs"
)

const schedConfigRoute = "/v1/operator/scheduler/configuration"

func schedConfigAnswer(algorithm string, index uint64) *structs.SchedulerConfigurationResponse {
	return &structs.SchedulerConfigurationResponse{
		SchedulerConfig: &structs.SchedulerConfiguration{SchedulerAlgorithm: algorithm, CreateIndex: 3, ModifyIndex: index},
		QueryMeta:       structs.QueryMeta{Index: index, KnownLeader: true},
	}
}

func TestOperatorSchedulerGetConfig(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		answer   *structs.SchedulerConfigurationResponse
		wantCode int
		wantOut  []string
	}{
		{name: "set", answer: schedConfigAnswer("spread", 7), wantOut: []string{"Scheduler Algorithm = spread", "Modify Index        = 7"}},
		{name: "default", answer: schedConfigAnswer("fgd", 0), wantOut: []string{"Scheduler Algorithm = fgd (default)"}},
		{name: "json", args: []string{"-json"}, answer: schedConfigAnswer("binpack", 9), wantOut: []string{`"SchedulerAlgorithm": "binpack"`, `"ModifyIndex": 9`}},
		{name: "no config in the answer", answer: &structs.SchedulerConfigurationResponse{}, wantOut: []string{"Scheduler Algorithm = fgd (default)"}},
		{name: "extra argument", args: []string{"x"}, wantCode: 1, wantOut: []string{"This command takes no arguments."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, addr := newFakeAgent(t)
			f.on("GET "+schedConfigRoute, tt.answer)
			code, stdout, stderr := run(t, addr, append([]string{"operator", "scheduler", "get-config"}, tt.args...)...)
			if code != tt.wantCode {
				t.Errorf("got exit %d, want %d; stderr %q", code, tt.wantCode, stderr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("got output %q, want it to contain %q", stdout+stderr, w)
				}
			}
		})
	}
}

// putRecorder answers PUT scheduler configuration with updated and keeps
// the bodies and query strings it was sent.
type putRecorder struct {
	mu      sync.Mutex
	bodies  []structs.SchedulerConfiguration
	queries []string
}

func (p *putRecorder) handler(updated bool) func(r *http.Request) (int, any) {
	return func(r *http.Request) (int, any) {
		var cfg structs.SchedulerConfiguration
		if err := json.NewDecoder(r.Body).Decode(&cfg); err != nil {
			return http.StatusBadRequest, err.Error()
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.bodies = append(p.bodies, cfg)
		p.queries = append(p.queries, r.URL.RawQuery)
		return http.StatusOK, &structs.SchedulerSetConfigurationResponse{Updated: updated, WriteMeta: structs.WriteMeta{Index: 12}}
	}
}

func TestOperatorSchedulerSetConfig(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		updated   bool
		wantCode  int
		wantOut   string
		wantPuts  []string // algorithms sent
		wantQuery string   // query string of the PUT
	}{
		{
			name: "set", args: []string{"-scheduler-algorithm=spread"}, updated: true,
			wantOut: "Scheduler configuration updated: algorithm spread, memory oversubscription false (index 12)", wantPuts: []string{"spread"},
		},
		{
			name: "memory oversubscription keeps the algorithm", args: []string{"-memory-oversubscription=true"}, updated: true,
			wantOut: "algorithm binpack, memory oversubscription true", wantPuts: []string{"binpack"},
		},
		{
			name: "bad memory oversubscription", args: []string{"-memory-oversubscription=maybe"},
			wantCode: 1, wantOut: `Invalid -memory-oversubscription "maybe": want true or false`,
		},
		{
			name: "double dash and upper case", args: []string{"--scheduler-algorithm", "BINPACK"}, updated: true,
			wantOut: "algorithm binpack", wantPuts: []string{"binpack"},
		},
		{
			name: "check index", args: []string{"-scheduler-algorithm=fgd", "-check-index=7"}, updated: true,
			wantOut: "updated", wantPuts: []string{"fgd"}, wantQuery: "cas=7",
		},
		{
			name: "check index lost", args: []string{"-scheduler-algorithm=fgd", "-check-index=6"}, updated: false,
			wantCode: 1, wantOut: "not updated: its modify index is no longer 6", wantPuts: []string{"fgd"}, wantQuery: "cas=6",
		},
		{
			name: "bad algorithm", args: []string{"-scheduler-algorithm=worstfit"},
			wantCode: 1, wantOut: `Invalid -scheduler-algorithm "worstfit": want one of binpack, spread, fgd`,
		},
		{
			name: "bad check index", args: []string{"-scheduler-algorithm=fgd", "-check-index=soon"},
			wantCode: 1, wantOut: `Invalid -check-index "soon"`,
		},
		{
			name: "nothing to change", wantCode: 1, wantOut: "Nothing to change: give -scheduler-algorithm or -memory-oversubscription.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, addr := newFakeAgent(t)
			f.on("GET "+schedConfigRoute, schedConfigAnswer("binpack", 7))
			puts := &putRecorder{}
			f.onFunc("PUT "+schedConfigRoute, puts.handler(tt.updated))
			code, stdout, stderr := run(t, addr, append([]string{"operator", "scheduler", "set-config"}, tt.args...)...)
			if code != tt.wantCode {
				t.Errorf("got exit %d, want %d; stderr %q", code, tt.wantCode, stderr)
			}
			if !strings.Contains(stdout+stderr, tt.wantOut) {
				t.Errorf("got output %q, want it to contain %q", stdout+stderr, tt.wantOut)
			}
			var sent []string
			for _, b := range puts.bodies {
				sent = append(sent, b.SchedulerAlgorithm)
			}
			if !slices.Equal(sent, tt.wantPuts) {
				t.Errorf("got PUT algorithms %q, want %q", sent, tt.wantPuts)
			}
			if len(puts.queries) > 0 && puts.queries[0] != tt.wantQuery {
				t.Errorf("got PUT query %q, want %q", puts.queries[0], tt.wantQuery)
			}
		})
	}
}

func TestOperatorSchedulerSetConfigServerRefuses(t *testing.T) {
	f, addr := newFakeAgent(t)
	f.on("GET "+schedConfigRoute, schedConfigAnswer("binpack", 7))
	f.onFunc("PUT "+schedConfigRoute, func(*http.Request) (int, any) {
		return http.StatusBadRequest, `invalid scheduler configuration: SchedulerAlgorithm "x" is not one of binpack, spread, fgd`
	})
	code, _, stderr := run(t, addr, "operator", "scheduler", "set-config", "-scheduler-algorithm=spread")
	if code != 1 {
		t.Errorf("got exit %d, want 1", code)
	}
	if want := "Unexpected response code: 400"; !strings.Contains(stderr, want) {
		t.Errorf("got stderr %q, want it to contain %q", stderr, want)
	}
}
