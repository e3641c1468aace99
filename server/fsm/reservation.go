package fsm

import (
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// reservationRecord holds one gang reservation in a snapshot. Numbered
// apart from the other records' ranges; never renumber.
const reservationRecord recordType = 32

// persistReservations writes every stored reservation.
func (s *fsmSnapshot) persistReservations(rec func(recordType, any) error) error {
	all, err := s.snap.Reservations()
	if err != nil {
		return err
	}
	for _, r := range all {
		if err := rec(reservationRecord, r); err != nil {
			return fmt.Errorf("reservation of job %q: %w", r.JobID, err)
		}
	}
	return nil
}

func restoreReservation(r *state.StateRestore, dec *codec.Decoder) error {
	var res structs.Reservation
	if err := dec.Decode(&res); err != nil {
		return fmt.Errorf("reservation: %w", err)
	}
	return r.ReservationRestore(&res)
}
