package fsm

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// serviceRegistrationRecord holds one service registration in a
// snapshot. Numbered apart from the other records' ranges; never
// renumber.
const serviceRegistrationRecord recordType = 100

func (f *FSM) applyServiceRegistrationUpsert(buf []byte, index uint64) any {
	var req structs.ServiceRegistrationUpsertRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode service registration upsert: %w", err)
	}
	return f.State().UpsertServiceRegistrations(index, req.Services)
}

func (f *FSM) applyServiceRegistrationDeleteByID(buf []byte, index uint64) any {
	var req structs.ServiceRegistrationDeleteByIDRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode service registration delete: %w", err)
	}
	return f.State().DeleteServiceRegistration(index, req.Namespace, req.ID)
}

func (f *FSM) applyServiceRegistrationDeleteByAlloc(buf []byte, index uint64) any {
	var req structs.ServiceRegistrationDeleteByAllocRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode service registration delete by alloc: %w", err)
	}
	return f.State().DeleteServiceRegistrationsByAlloc(index, req.AllocIDs)
}

// persistServiceRegistrations writes the service registry.
func (s *fsmSnapshot) persistServiceRegistrations(rec func(recordType, any) error) error {
	regs, err := s.snap.ServiceRegistrations(nil, "*")
	if err != nil {
		return err
	}
	return writeAll(rec, serviceRegistrationRecord, regs)
}

func restoreServiceRegistration(r *state.StateRestore, dec *codec.Decoder) error {
	var reg structs.ServiceRegistration
	if err := dec.Decode(&reg); err != nil {
		return fmt.Errorf("service registration: %w", err)
	}
	return r.ServiceRegistrationRestore(&reg)
}

// serviceEvents maps a registration's change to Nomad's Service topic
// event ({"Service": registration}), keyed by service name.
func serviceEvents(c memdb.Change) []structs.Event {
	typ, obj := structs.TypeServiceRegistration, c.After
	if c.Deleted() {
		typ, obj = structs.TypeServiceDeregistration, c.Before
	}
	r := obj.(*structs.ServiceRegistration)
	return []structs.Event{{
		Topic: structs.TopicService, Type: typ, Key: r.ServiceName, Namespace: nsOf(r.Namespace),
		FilterKeys: []string{r.JobID, r.AllocID}, Payload: map[string]any{"Service": r},
	}}
}
