package fsm

import (
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// schedulerConfigRecord holds the scheduler configuration in a snapshot.
// It is numbered apart from the records in snapshot.go so that records
// added there in the meantime do not collide with it; never renumber.
const schedulerConfigRecord recordType = 16

// applySchedulerConfig stores the operator's scheduler configuration. A
// check-and-set whose index no longer matches changes nothing and answers
// structs.ErrCASConflict.
func (f *FSM) applySchedulerConfig(buf []byte, index uint64) any {
	var req structs.SchedulerSetConfigRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode scheduler configuration: %w", err)
	}
	s := f.State()
	if !req.CAS {
		return s.SetSchedulerConfig(index, req.Config)
	}
	applied, err := s.SchedulerConfigCAS(index, req.Config)
	if err != nil {
		return err
	}
	if !applied {
		return fmt.Errorf("set scheduler configuration: %w", structs.ErrCASConflict)
	}
	return nil
}

// persistSchedulerConfig writes the configuration the operator set, if
// any (the default is not stored, so it is not written either).
func (s *fsmSnapshot) persistSchedulerConfig(rec func(recordType, any) error) error {
	cfg, err := s.snap.SchedulerConfig()
	if err != nil {
		return err
	}
	if cfg.ModifyIndex == 0 {
		return nil
	}
	if err := rec(schedulerConfigRecord, cfg); err != nil {
		return fmt.Errorf("scheduler configuration: %w", err)
	}
	return nil
}

func restoreSchedulerConfig(r *state.StateRestore, dec *codec.Decoder) error {
	var cfg structs.SchedulerConfiguration
	if err := dec.Decode(&cfg); err != nil {
		return fmt.Errorf("scheduler configuration: %w", err)
	}
	return r.SchedulerConfigRestore(&cfg)
}
