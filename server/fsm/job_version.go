package fsm

import (
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// jobVersionRecord holds one stored job version in a snapshot. Numbered
// apart from the other records' ranges (70-79: versions and
// deployments); never renumber.
const jobVersionRecord recordType = 70

func (f *FSM) applyJobStability(buf []byte, index uint64) any {
	var req structs.JobStabilityRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode job stability: %w", err)
	}
	return f.State().Write(index, func(tx *state.Txn) error {
		return tx.UpdateJobStability(req.Namespace, req.JobID, req.JobVersion, req.Stable)
	})
}

// persistJobVersions writes every stored job version.
func (s *fsmSnapshot) persistJobVersions(rec func(recordType, any) error) error {
	versions, err := s.snap.AllJobVersions()
	if err != nil {
		return err
	}
	return writeAll(rec, jobVersionRecord, versions)
}

func restoreJobVersion(r *state.StateRestore, dec *codec.Decoder) error {
	var j structs.Job
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("job version: %w", err)
	}
	return r.JobVersionRestore(&j)
}
