package fsm

import (
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// periodicLaunchRecord holds one periodic parent's last launch in a
// snapshot. Numbered apart from the other records' ranges; never
// renumber.
const periodicLaunchRecord recordType = 80

// applyPeriodicLaunch records a periodic parent's launch.
func (f *FSM) applyPeriodicLaunch(buf []byte, index uint64) any {
	var req structs.PeriodicLaunchUpsertRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode periodic launch: %w", err)
	}
	return f.State().Write(index, func(tx *state.Txn) error {
		return tx.UpsertPeriodicLaunch(req.Launch)
	})
}

// persistPeriodicLaunches writes every stored launch.
func (s *fsmSnapshot) persistPeriodicLaunches(rec func(recordType, any) error) error {
	all, err := s.snap.PeriodicLaunches()
	if err != nil {
		return err
	}
	for _, l := range all {
		if err := rec(periodicLaunchRecord, l); err != nil {
			return fmt.Errorf("periodic launch of job %q: %w", l.ID, err)
		}
	}
	return nil
}

func restorePeriodicLaunch(r *state.StateRestore, dec *codec.Decoder) error {
	var l structs.PeriodicLaunch
	if err := dec.Decode(&l); err != nil {
		return fmt.Errorf("periodic launch: %w", err)
	}
	return r.PeriodicLaunchRestore(&l)
}
