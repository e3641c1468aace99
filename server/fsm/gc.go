package fsm

import (
	"fmt"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// applyGarbageCollect deletes what the leader's garbage collection chose,
// each object only if it is still collectable (state.Txn.GarbageCollect).
func (f *FSM) applyGarbageCollect(buf []byte, index uint64) any {
	var req structs.GarbageCollectRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode garbage collect: %w", err)
	}
	return f.State().Write(index, func(tx *state.Txn) error {
		_, err := tx.GarbageCollect(&req)
		return err
	})
}
