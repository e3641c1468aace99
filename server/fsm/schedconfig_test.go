package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

func setSchedConfig(algorithm string, cas bool, modifyIndex uint64) *structs.SchedulerSetConfigRequest {
	return &structs.SchedulerSetConfigRequest{
		Config: &structs.SchedulerConfiguration{SchedulerAlgorithm: algorithm, ModifyIndex: modifyIndex},
		CAS:    cas,
	}
}

func TestApplySchedulerConfig(t *testing.T) {
	f, _ := newTestFSM(t)
	tests := []struct {
		name    string
		index   uint64
		typ     structs.MessageType
		req     *structs.SchedulerSetConfigRequest
		wantErr error
		want    structs.SchedulerConfiguration
	}{
		{
			name: "set", index: 3, typ: structs.SchedulerConfigRequestType, req: setSchedConfig("spread", false, 0),
			want: structs.SchedulerConfiguration{SchedulerAlgorithm: "spread", CreateIndex: 3, ModifyIndex: 3},
		},
		{
			name: "with the ignore flag", index: 4, typ: structs.SchedulerConfigRequestType | structs.IgnoreUnknownTypeFlag, req: setSchedConfig("binpack", false, 0),
			want: structs.SchedulerConfiguration{SchedulerAlgorithm: "binpack", CreateIndex: 3, ModifyIndex: 4},
		},
		{
			name: "stale check-and-set", index: 5, typ: structs.SchedulerConfigRequestType, req: setSchedConfig("spread", true, 3),
			wantErr: structs.ErrCASConflict,
			want:    structs.SchedulerConfiguration{SchedulerAlgorithm: "binpack", CreateIndex: 3, ModifyIndex: 4},
		},
		{
			name: "current check-and-set", index: 6, typ: structs.SchedulerConfigRequestType, req: setSchedConfig("fgd", true, 4),
			want: structs.SchedulerConfiguration{SchedulerAlgorithm: "fgd", CreateIndex: 3, ModifyIndex: 6},
		},
		{
			name: "invalid algorithm", index: 7, typ: structs.SchedulerConfigRequestType, req: setSchedConfig("worstfit", false, 0),
			wantErr: structs.ErrInvalid,
			want:    structs.SchedulerConfiguration{SchedulerAlgorithm: "fgd", CreateIndex: 3, ModifyIndex: 6},
		},
		{
			name: "missing config", index: 8, typ: structs.SchedulerConfigRequestType, req: &structs.SchedulerSetConfigRequest{},
			wantErr: structs.ErrInvalid,
			want:    structs.SchedulerConfiguration{SchedulerAlgorithm: "fgd", CreateIndex: 3, ModifyIndex: 6},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.Apply(logEntry(t, tt.index, tt.typ, tt.req))
			err, _ := resp.(error)
			if (tt.wantErr == nil) != (resp == nil) || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("got answer %v, want %v", resp, tt.wantErr)
			}
			got, err := f.State().SchedulerConfig()
			if err != nil {
				t.Fatal(err)
			}
			if *got != tt.want {
				t.Errorf("got stored %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestSnapshotRestoreSchedulerConfig(t *testing.T) {
	tests := []struct {
		name      string
		set       bool
		want      structs.SchedulerConfiguration
		wantIndex uint64
	}{
		{name: "set", set: true, want: structs.SchedulerConfiguration{SchedulerAlgorithm: "spread", CreateIndex: 7, ModifyIndex: 7}, wantIndex: 7},
		{name: "never set", want: *structs.DefaultSchedulerConfiguration()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, _ := newTestFSM(t)
			populate(t, src)
			if tt.set {
				apply(t, src, 7, structs.SchedulerConfigRequestType, setSchedConfig("spread", false, 0))
			}
			sink := persist(t, src)

			dst, _ := newTestFSM(t)
			if err := dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
				t.Fatalf("Restore: %v", err)
			}
			got, err := dst.State().SchedulerConfig()
			if err != nil {
				t.Fatal(err)
			}
			if *got != tt.want {
				t.Errorf("got restored %+v, want %+v", *got, tt.want)
			}
			if idx, _ := dst.State().Index(state.TableSchedulerConfig); idx != tt.wantIndex {
				t.Errorf("got restored table index %d, want %d", idx, tt.wantIndex)
			}
			if n, _ := dst.State().NodeByID(nil, "n1"); n == nil {
				t.Error("got no node n1 after restore, want the rest of the state restored too")
			}
		})
	}
}
