package client

import (
	"github.com/droverhq/drover/structs"
)

// fakeServiceEndpoint is the fake server's ServiceRegistration endpoint:
// it counts upserts per allocation and accepts deregistrations.
type fakeServiceEndpoint struct{ s *fakeServer }

func (e *fakeServiceEndpoint) Upsert(args *structs.ServiceRegistrationUpsertRequest, reply *structs.GenericResponse) error {
	if err := e.s.refusal(); err != nil {
		return wire(err)
	}
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serviceUpserts == nil {
		s.serviceUpserts = map[string]int{}
	}
	for _, r := range args.Services {
		s.serviceUpserts[r.AllocID]++
	}
	reply.Index = s.index
	return nil
}

func (e *fakeServiceEndpoint) DeregisterAllocs(args *structs.ServiceRegistrationDeleteByAllocRequest, reply *structs.GenericResponse) error {
	if err := e.s.refusal(); err != nil {
		return wire(err)
	}
	return nil
}

// upserts returns how many registrations of alloc were sent.
func (s *fakeServer) upserts(allocID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serviceUpserts[allocID]
}
