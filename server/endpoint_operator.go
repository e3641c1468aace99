package server

import (
	"errors"
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// operatorEndpoint serves the "Operator" RPC methods: cluster-wide
// settings an operator reads and changes.
type operatorEndpoint struct{ srv *Server }

// SchedulerGetConfiguration returns the scheduler configuration (the
// default when none is set), blocking while MinQueryIndex is not below
// its index.
func (e *operatorEndpoint) SchedulerGetConfiguration(args *structs.SchedulerConfigurationRequest, reply *structs.SchedulerConfigurationResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCOperatorSchedulerGetConfiguration, &err)
	if done, err := s.forward(structs.RPCOperatorSchedulerGetConfiguration, args, reply); done {
		return err
	}
	if _, err := s.authorize(args.AuthToken, (*acl.ACL).AllowOperatorRead); err != nil {
		return err
	}
	ctx, cancel := s.queryContext(args.QueryOptions)
	defer cancel()
	var cfg *structs.SchedulerConfiguration
	index, err := s.State().BlockingQuery(ctx, args.MinQueryIndex, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		var err error
		if cfg, err = st.SchedulerConfigWatch(ws); err != nil {
			return 0, err
		}
		idx, err := st.Index(state.TableSchedulerConfig)
		return max(idx, 1), err
	})
	if err != nil {
		return fmt.Errorf("read scheduler configuration: %w", err)
	}
	reply.SchedulerConfig = cfg.Copy()
	reply.Index = index
	s.setQueryMeta(&reply.QueryMeta)
	return nil
}

// SchedulerSetConfiguration validates and stores the scheduler
// configuration through Raft. A check-and-set (args.CAS) whose
// Config.ModifyIndex is no longer the stored one answers Updated false.
func (e *operatorEndpoint) SchedulerSetConfiguration(args *structs.SchedulerSetConfigRequest, reply *structs.SchedulerSetConfigurationResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCOperatorSchedulerSetConfiguration, &err)
	if done, err := s.forward(structs.RPCOperatorSchedulerSetConfiguration, args, reply); done {
		return err
	}
	if err := s.requireManagement(args.AuthToken); err != nil {
		return err
	}
	if args.Config == nil {
		return fmt.Errorf("set scheduler configuration: missing configuration: %w", structs.ErrInvalid)
	}
	if err := args.Config.Validate(); err != nil {
		return fmt.Errorf("set scheduler configuration: %w", err)
	}
	req := &structs.SchedulerSetConfigRequest{Config: args.Config.Copy(), CAS: args.CAS, WriteRequest: args.WriteRequest}
	req.Config.Canonicalize()
	index, err := s.raftApply(structs.SchedulerConfigRequestType|structs.IgnoreUnknownTypeFlag, req)
	switch {
	case errors.Is(err, structs.ErrCASConflict):
		reply.Updated = false
		reply.Index, err = s.State().Index(state.TableSchedulerConfig)
		return err
	case err != nil:
		return fmt.Errorf("set scheduler configuration: %w", err)
	}
	reply.Updated = true
	reply.Index = index
	return nil
}
