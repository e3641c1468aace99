package server

import (
	"fmt"
	"time"

	"github.com/droverhq/drover/structs"
)

// systemEndpoint serves the "System" RPC methods: cluster maintenance.
type systemEndpoint struct{ srv *Server }

// GarbageCollect collects, on the leader, every finished job, evaluation,
// allocation and down node now, whatever its age (Nomad's force GC). It
// needs a management token.
func (e *systemEndpoint) GarbageCollect(args *structs.SystemGCRequest, reply *structs.GenericResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCSystemGarbageCollect, &err)
	if done, err := s.forward(structs.RPCSystemGarbageCollect, args, reply); done {
		return err
	}
	if err := s.requireManagement(args.AuthToken); err != nil {
		return err
	}
	if _, err := s.collectGarbage(time.Now(), gcThresholds{}); err != nil {
		return fmt.Errorf("garbage collect: %w", err)
	}
	reply.Index, err = s.State().LatestIndex()
	return err
}
