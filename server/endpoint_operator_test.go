package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// TestOperatorSchedulerConfiguration sets and reads the scheduler
// configuration through a real single-server Raft, over the wire for the
// read.
func TestOperatorSchedulerConfiguration(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	set := func(algorithm string, cas bool, index uint64) *structs.SchedulerSetConfigurationResponse {
		t.Helper()
		req := &structs.SchedulerSetConfigRequest{Config: &structs.SchedulerConfiguration{SchedulerAlgorithm: algorithm, ModifyIndex: index}, CAS: cas}
		var resp structs.SchedulerSetConfigurationResponse
		if err := s.RPC(structs.RPCOperatorSchedulerSetConfiguration, req, &resp); err != nil {
			t.Fatalf("set %s: %v", algorithm, err)
		}
		return &resp
	}

	first := set("spread", false, 0)
	if !first.Updated || first.Index == 0 {
		t.Fatalf("set: got %+v, want Updated at an index", first)
	}
	if stale := set("binpack", true, first.Index-1); stale.Updated || stale.Index != first.Index {
		t.Errorf("stale cas: got %+v, want not Updated at index %d", stale, first.Index)
	}

	c := dialRPC(t, s.listener.Addr())
	var got structs.SchedulerConfigurationResponse
	if err := c.Call(structs.RPCOperatorSchedulerGetConfiguration, &structs.SchedulerConfigurationRequest{}, &got); err != nil {
		t.Fatal(err)
	}
	want := structs.SchedulerConfiguration{SchedulerAlgorithm: "spread", CreateIndex: first.Index, ModifyIndex: first.Index}
	if got.SchedulerConfig == nil || *got.SchedulerConfig != want || got.Index != first.Index || !got.KnownLeader {
		t.Errorf("get: got %+v (config %+v), want %+v at index %d from a known leader", got, got.SchedulerConfig, want, first.Index)
	}

	if next := set("fgd", true, first.Index); !next.Updated || next.Index <= first.Index {
		t.Errorf("current cas: got %+v, want Updated at a later index", next)
	}
	if cfg, _ := s.State().SchedulerConfig(); cfg.SchedulerAlgorithm != "fgd" {
		t.Errorf("got stored algorithm %q, want fgd", cfg.SchedulerAlgorithm)
	}
}

func TestOperatorSchedulerConfigurationRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	tests := []struct {
		name     string
		req      *structs.SchedulerSetConfigRequest
		wantText string
	}{
		{"missing config", &structs.SchedulerSetConfigRequest{}, "missing configuration"},
		{"unknown algorithm", &structs.SchedulerSetConfigRequest{Config: &structs.SchedulerConfiguration{SchedulerAlgorithm: "worstfit"}}, `SchedulerAlgorithm "worstfit"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.RPC(structs.RPCOperatorSchedulerSetConfiguration, tt.req, &structs.SchedulerSetConfigurationResponse{})
			if !errors.Is(err, structs.ErrInvalid) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("got %v, want an invalid-request error about %s", err, tt.wantText)
			}
		})
	}
	if idx, _ := s.State().Index(state.TableSchedulerConfig); idx != 0 {
		t.Errorf("got table index %d after refused sets, want 0", idx)
	}
}
