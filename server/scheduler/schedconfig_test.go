package scheduler_test

import (
	"testing"

	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

var _ scheduler.State = (*state.StateSnapshot)(nil)

func TestConfiguredAlgorithm(t *testing.T) {
	tests := []struct {
		name string
		set  string // algorithm stored first; "" stores nothing
		want string
	}{
		{name: "never set", want: structs.SchedulerAlgorithmFGD},
		{name: "spread", set: structs.SchedulerAlgorithmSpread, want: structs.SchedulerAlgorithmSpread},
		{name: "binpack", set: structs.SchedulerAlgorithmBinpack, want: structs.SchedulerAlgorithmBinpack},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := state.NewStateStore()
			if err != nil {
				t.Fatal(err)
			}
			if tt.set != "" {
				if err := s.SetSchedulerConfig(5, &structs.SchedulerConfiguration{SchedulerAlgorithm: tt.set}); err != nil {
					t.Fatal(err)
				}
			}
			snap, err := s.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			got, err := scheduler.ConfiguredAlgorithm(snap)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got algorithm %q, want %q", got, tt.want)
			}
		})
	}
}
