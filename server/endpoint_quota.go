package server

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// quotaEndpoint serves the "Quota" RPC methods.
type quotaEndpoint struct{ srv *Server }

// Upsert creates or replaces quota specifications. A raised quota wakes
// the blocked evaluations (the FSM reports a capacity change).
func (e *quotaEndpoint) Upsert(args *structs.QuotaSpecUpsertRequest, reply *structs.GenericResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCQuotaUpsert, &err)
	if done, err := s.forward(structs.RPCQuotaUpsert, args, reply); done {
		return err
	}
	if _, err := s.authorize(args.AuthToken, (*acl.ACL).AllowQuotaWrite); err != nil {
		return err
	}
	if len(args.Quotas) == 0 {
		return fmt.Errorf("upsert quotas: none given: %w", structs.ErrInvalid)
	}
	req := &structs.QuotaSpecUpsertRequest{WriteRequest: args.WriteRequest}
	for _, q := range args.Quotas {
		if q == nil {
			return fmt.Errorf("upsert quotas: missing quota: %w", structs.ErrInvalid)
		}
		if err := q.CheckShape(); err != nil {
			return err
		}
		req.Quotas = append(req.Quotas, q.Copy())
	}
	if err := s.dryRun(func(tx *state.Txn) error { return tx.UpsertQuotaSpecs(req.Quotas) }); err != nil {
		return err
	}
	index, err := s.raftApply(structs.QuotaUpsertRequestType, req)
	if err != nil {
		return fmt.Errorf("upsert quotas: %w", err)
	}
	reply.Index = index
	return nil
}

// Delete removes quota specifications. One that a namespace names, or an
// unknown one, is refused, and then nothing is deleted.
func (e *quotaEndpoint) Delete(args *structs.QuotaSpecDeleteRequest, reply *structs.GenericResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCQuotaDelete, &err)
	if done, err := s.forward(structs.RPCQuotaDelete, args, reply); done {
		return err
	}
	if _, err := s.authorize(args.AuthToken, (*acl.ACL).AllowQuotaWrite); err != nil {
		return err
	}
	if len(args.Names) == 0 {
		return fmt.Errorf("delete quotas: none given: %w", structs.ErrInvalid)
	}
	if err := s.dryRun(func(tx *state.Txn) error { return tx.DeleteQuotaSpecs(args.Names) }); err != nil {
		return err
	}
	index, err := s.raftApply(structs.QuotaDeleteRequestType, args)
	if err != nil {
		return fmt.Errorf("delete quotas: %w", err)
	}
	reply.Index = index
	return nil
}

// Get returns one quota specification (nil when there is none of that
// name).
func (e *quotaEndpoint) Get(args *structs.QuotaSpecificRequest, reply *structs.SingleQuotaSpecResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCQuotaGet, &err)
	if done, err := s.forward(structs.RPCQuotaGet, args, reply); done {
		return err
	}
	if _, err := s.authorize(args.AuthToken, (*acl.ACL).AllowQuotaRead); err != nil {
		return err
	}
	return s.blockingTableRead(args.QueryOptions, &reply.QueryMeta, state.TableQuotas, func(ws memdb.WatchSet, st *state.StateStore) error {
		q, err := st.QuotaSpecByName(ws, args.Name)
		reply.Quota = q.Copy()
		return err
	})
}

// List returns the quota specifications whose name starts with Prefix.
func (e *quotaEndpoint) List(args *structs.QuotaListRequest, reply *structs.QuotaListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCQuotaList, &err)
	if done, err := s.forward(structs.RPCQuotaList, args, reply); done {
		return err
	}
	if _, err := s.authorize(args.AuthToken, (*acl.ACL).AllowQuotaRead); err != nil {
		return err
	}
	return s.blockingTableRead(args.QueryOptions, &reply.QueryMeta, state.TableQuotas, func(ws memdb.WatchSet, st *state.StateStore) error {
		qs, err := st.QuotaSpecs(ws, args.Prefix)
		reply.Quotas = nil
		for _, q := range qs {
			reply.Quotas = append(reply.Quotas, q.Copy())
		}
		return err
	})
}

// Usage returns what the quota's namespaces hold in this region and the
// quota's limit here; Usage is nil for an unknown quota. It blocks on the
// allocations, namespaces and quotas.
func (e *quotaEndpoint) Usage(args *structs.QuotaSpecificRequest, reply *structs.QuotaUsageResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCQuotaUsage, &err)
	if done, err := s.forward(structs.RPCQuotaUsage, args, reply); done {
		return err
	}
	if _, err := s.authorize(args.AuthToken, (*acl.ACL).AllowQuotaRead); err != nil {
		return err
	}
	region := s.config.Region
	if region == "" {
		region = "global"
	}
	return s.blockingTableRead(args.QueryOptions, &reply.QueryMeta, state.TableQuotas, func(ws memdb.WatchSet, st *state.StateStore) error {
		u, err := st.QuotaUsage(ws, args.Name)
		if err != nil || u == nil {
			reply.Usage, reply.Limit = nil, nil
			return err
		}
		q, err := st.QuotaSpecByName(ws, args.Name)
		reply.Usage, reply.Region, reply.Limit = u, region, nil
		if q != nil {
			if l := q.LimitFor(region); l != nil {
				c := *l
				reply.Limit = &c
			}
		}
		return err
	}, state.TableNamespaces, state.TableAllocs)
}
