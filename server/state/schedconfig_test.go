package state

import (
	"context"
	"errors"
	"testing"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

func TestSchedulerConfigDefault(t *testing.T) {
	s := newTestStore(t)
	got, err := s.SchedulerConfig()
	if err != nil {
		t.Fatal(err)
	}
	if *got != *structs.DefaultSchedulerConfiguration() {
		t.Errorf("got %+v, want the default %+v", *got, *structs.DefaultSchedulerConfiguration())
	}
	if got.Algorithm() != structs.SchedulerAlgorithmFGD {
		t.Errorf("got algorithm %q, want %q", got.Algorithm(), structs.SchedulerAlgorithmFGD)
	}
}

func TestSchedulerConfigRoundTrip(t *testing.T) {
	s := newTestStore(t)
	in := &structs.SchedulerConfiguration{SchedulerAlgorithm: structs.SchedulerAlgorithmSpread}
	if err := s.SetSchedulerConfig(10, in); err != nil {
		t.Fatal(err)
	}
	in.SchedulerAlgorithm = "changed by the caller"
	if err := s.SetSchedulerConfig(12, &structs.SchedulerConfiguration{SchedulerAlgorithm: structs.SchedulerAlgorithmBinpack}); err != nil {
		t.Fatal(err)
	}
	got, err := s.SchedulerConfig()
	if err != nil {
		t.Fatal(err)
	}
	want := structs.SchedulerConfiguration{SchedulerAlgorithm: structs.SchedulerAlgorithmBinpack, CreateIndex: 10, ModifyIndex: 12}
	if *got != want {
		t.Errorf("got %+v, want %+v", *got, want)
	}
	if idx, _ := s.Index(TableSchedulerConfig); idx != 12 {
		t.Errorf("got table index %d, want 12", idx)
	}
}

func TestSchedulerConfigEmptyMeansDefault(t *testing.T) {
	s := newTestStore(t)
	if err := s.SetSchedulerConfig(3, &structs.SchedulerConfiguration{}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.SchedulerConfig()
	if got.SchedulerAlgorithm != structs.DefaultSchedulerAlgorithm {
		t.Errorf("got algorithm %q, want the default %q", got.SchedulerAlgorithm, structs.DefaultSchedulerAlgorithm)
	}
}

func TestSchedulerConfigRejectsInvalid(t *testing.T) {
	s := newTestStore(t)
	err := s.SetSchedulerConfig(3, &structs.SchedulerConfiguration{SchedulerAlgorithm: "random"})
	if !errors.Is(err, structs.ErrInvalid) {
		t.Fatalf("got %v, want an error wrapping ErrInvalid", err)
	}
	if idx, _ := s.Index(TableSchedulerConfig); idx != 0 {
		t.Errorf("got table index %d after a refused write, want 0", idx)
	}
}

func TestSchedulerConfigCAS(t *testing.T) {
	s := newTestStore(t)
	tests := []struct {
		name      string
		index     uint64
		cas       uint64
		algorithm string
		want      bool
		wantAlgo  string
	}{
		{name: "create needs 0", index: 5, cas: 1, algorithm: "spread", want: false, wantAlgo: structs.DefaultSchedulerAlgorithm},
		{name: "create", index: 6, cas: 0, algorithm: "spread", want: true, wantAlgo: "spread"},
		{name: "stale index", index: 7, cas: 5, algorithm: "binpack", want: false, wantAlgo: "spread"},
		{name: "current index", index: 8, cas: 6, algorithm: "binpack", want: true, wantAlgo: "binpack"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			applied, err := s.SchedulerConfigCAS(tt.index, &structs.SchedulerConfiguration{SchedulerAlgorithm: tt.algorithm, ModifyIndex: tt.cas})
			if err != nil {
				t.Fatal(err)
			}
			if applied != tt.want {
				t.Errorf("got applied %v, want %v", applied, tt.want)
			}
			if got, _ := s.SchedulerConfig(); got.SchedulerAlgorithm != tt.wantAlgo {
				t.Errorf("got algorithm %q, want %q", got.SchedulerAlgorithm, tt.wantAlgo)
			}
		})
	}
}

func TestSchedulerConfigWatchFires(t *testing.T) {
	s := newTestStore(t)
	ws := memdb.NewWatchSet()
	if _, err := s.SchedulerConfigWatch(ws); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetSchedulerConfig(4, &structs.SchedulerConfiguration{SchedulerAlgorithm: "binpack"}); err != nil {
		t.Fatal(err)
	}
	// The write has fired the channel already, so this returns at once;
	// the timeout only bounds a failing run.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ws.WatchCtx(ctx); err != nil {
		t.Errorf("got %v from the watch set after a write, want a wake-up", err)
	}
	if got, _ := snap.SchedulerConfig(); got.ModifyIndex != 0 {
		t.Errorf("got snapshot config at index %d, want the default (the write came after)", got.ModifyIndex)
	}
}

func TestSchedulerConfigRestore(t *testing.T) {
	s := newTestStore(t)
	r, err := s.Restore()
	if err != nil {
		t.Fatal(err)
	}
	want := structs.SchedulerConfiguration{SchedulerAlgorithm: "spread", CreateIndex: 3, ModifyIndex: 9}
	if err := r.SchedulerConfigRestore(want.Copy()); err != nil {
		t.Fatal(err)
	}
	if err := r.IndexRestore(TableSchedulerConfig, 9); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(); err != nil {
		t.Fatal(err)
	}
	got, _ := s.SchedulerConfig()
	if *got != want {
		t.Errorf("got %+v, want %+v", *got, want)
	}
}
