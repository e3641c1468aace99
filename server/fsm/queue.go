package fsm

import (
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// queueRecord holds one stored fair-share queue in a snapshot. Numbered
// apart from the other records' ranges; never renumber.
const queueRecord recordType = 40

// applyQueueUpsert stores a queue. A new weight, guarantee or maximum
// changes what each queue may be admitted, so blocked evaluations are
// retried (a capacity change).
func (f *FSM) applyQueueUpsert(buf []byte, index uint64) any {
	var req structs.QueueUpsertRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode queue upsert: %w", err)
	}
	if err := f.State().UpsertQueue(index, req.Queue); err != nil {
		return err
	}
	f.capacityChanged(index)
	return nil
}

func (f *FSM) applyQueueDelete(buf []byte, index uint64) any {
	var req structs.QueueDeleteRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode queue delete: %w", err)
	}
	return f.State().DeleteQueue(index, req.Name)
}

// persistQueues writes the stored queues (the built-in default queue is
// not stored, so it is not written either).
func (s *fsmSnapshot) persistQueues(rec func(recordType, any) error) error {
	queues, err := s.snap.Queues()
	if err != nil {
		return err
	}
	for _, q := range queues {
		if q.CreateIndex == 0 {
			continue // the built-in default queue
		}
		if err := rec(queueRecord, q); err != nil {
			return fmt.Errorf("queue %q: %w", q.Name, err)
		}
	}
	return nil
}

func restoreQueue(r *state.StateRestore, dec *codec.Decoder) error {
	var q structs.Queue
	if err := dec.Decode(&q); err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	return r.QueueRestore(&q)
}
