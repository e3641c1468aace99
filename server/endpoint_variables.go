package server

import (
	"errors"
	"fmt"
	"strings"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// variablesEndpoint serves the "Variables" RPC methods: Nomad's
// variables, sealed at rest (variables_keys.go). Items are decrypted
// only to answer a caller allowed to read them.
type variablesEndpoint struct{ srv *Server }

// Upsert writes a variable, check-and-set when CheckIndex is set; a lost
// check-and-set answers the variable as it is in reply.Conflict and no
// error, as Nomad does (HTTP 409).
func (e *variablesEndpoint) Upsert(args *structs.VariablesUpsertRequest, reply *structs.VariablesUpsertResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCVariablesUpsert, &err)
	if done, err := s.forward(structs.RPCVariablesUpsert, args, reply); done {
		return err
	}
	ns := writeNamespace(args.WriteRequest)
	a, err := s.authorize(args.AuthToken, func(a *acl.ACL) bool {
		return args.Var != nil && a.AllowVariableOperation(ns, args.Var.Path, acl.VariablesCapWrite)
	})
	if err != nil {
		return err
	}
	v := args.Var.Copy()
	v.Namespace = ns
	if err := structs.ValidateVariable(v, s.config.Limits); err != nil {
		return err
	}
	if err := s.checkNamespace(v.Namespace); err != nil {
		return err
	}
	now := time.Now().UnixNano()
	v.CreateTime, v.ModifyTime = now, now
	sealed, err := s.sealVariable(v)
	if err != nil {
		return fmt.Errorf("upsert variable %q: %w", v.Path, err)
	}
	index, err := s.raftApply(structs.VariableUpsertRequestType, &structs.VariableUpsertEntry{Var: sealed, CheckIndex: args.CheckIndex})
	if errors.Is(err, structs.ErrConflict) {
		reply.Conflict, err = s.variableConflict(a, v.Namespace, v.Path)
		s.setIndexFromTable(&reply.WriteMeta)
		return err
	}
	if err != nil {
		return fmt.Errorf("upsert variable %q: %w", v.Path, err)
	}
	stored, err := s.State().VariableByPath(nil, v.Namespace, v.Path)
	if err != nil {
		return err
	}
	out := v.Copy()
	if stored != nil {
		out.VariableMetadata = stored.VariableMetadata
	}
	reply.Output = out
	reply.Index = index
	return nil
}

// Delete removes a variable (check-and-set as Upsert).
func (e *variablesEndpoint) Delete(args *structs.VariablesDeleteRequest, reply *structs.VariablesDeleteResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCVariablesDelete, &err)
	if done, err := s.forward(structs.RPCVariablesDelete, args, reply); done {
		return err
	}
	ns := writeNamespace(args.WriteRequest)
	a, err := s.authorize(args.AuthToken, func(a *acl.ACL) bool {
		return a.AllowVariableOperation(ns, args.Path, acl.VariablesCapDestroy)
	})
	if err != nil {
		return err
	}
	if err := structs.ValidateVariablePath(args.Path); err != nil {
		return err
	}
	entry := &structs.VariableDeleteEntry{Namespace: ns, Path: args.Path, CheckIndex: args.CheckIndex}
	index, err := s.raftApply(structs.VariableDeleteRequestType, entry)
	if errors.Is(err, structs.ErrConflict) {
		reply.Conflict, err = s.variableConflict(a, ns, args.Path)
		s.setIndexFromTable(&reply.WriteMeta)
		return err
	}
	if err != nil {
		return fmt.Errorf("delete variable %q: %w", args.Path, err)
	}
	reply.Index = index
	return nil
}

// variableConflict is the variable a check-and-set lost to, with its
// items only when a may read them.
func (s *Server) variableConflict(a *acl.ACL, ns, path string) (*structs.VariableDecrypted, error) {
	sealed, err := s.State().VariableByPath(nil, ns, path)
	if err != nil || sealed == nil {
		return &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Namespace: ns, Path: path}}, err
	}
	if !a.AllowVariableOperation(ns, path, acl.VariablesCapRead) {
		return &structs.VariableDecrypted{VariableMetadata: sealed.VariableMetadata}, nil
	}
	return s.openVariable(sealed)
}

func (s *Server) setIndexFromTable(m *structs.WriteMeta) {
	m.Index, _ = s.State().Index(state.TableVariables)
}

// Read answers the variable at Path decrypted, nil when there is none
// (a blocking query on it).
func (e *variablesEndpoint) Read(args *structs.VariablesReadRequest, reply *structs.VariablesReadResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCVariablesRead, &err)
	if done, err := s.forward(structs.RPCVariablesRead, args, reply); done {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	if _, err := s.authorize(args.AuthToken, func(a *acl.ACL) bool {
		return a.AllowVariableOperation(ns, args.Path, acl.VariablesCapRead)
	}); err != nil {
		return err
	}
	if err := structs.ValidateVariablePath(args.Path); err != nil {
		return err
	}
	return s.readVariable(args.QueryOptions, &reply.QueryMeta, ns, args.Path, &reply.Data)
}

// readVariable is a blocking read of one variable, decrypted into out.
func (s *Server) readVariable(q structs.QueryOptions, meta *structs.QueryMeta, ns, path string, out **structs.VariableDecrypted) error {
	var sealed *structs.VariableEncrypted
	err := s.blockingRead(q, meta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		v, err := st.VariableByPath(ws, ns, path)
		sealed = v
		if err != nil || v == nil {
			idx, ierr := st.Index(state.TableVariables)
			return idx, errors.Join(err, ierr)
		}
		return v.ModifyIndex, nil
	})
	if err != nil || sealed == nil {
		*out = nil
		return err
	}
	*out, err = s.openVariable(sealed)
	return err
}

// List answers the metadata of the variables under the request's prefix
// that the caller may list, in its namespace or all ("*").
func (e *variablesEndpoint) List(args *structs.VariablesListRequest, reply *structs.VariablesListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCVariablesList, &err)
	if done, err := s.forward(structs.RPCVariablesList, args, reply); done {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	a, err := s.authorize(args.AuthToken, func(a *acl.ACL) bool { return a.AllowVariableList(ns) })
	if err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		vars, err := st.Variables(ws, ns, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Data = []*structs.VariableMetadata{}
		var idx uint64
		for _, v := range vars {
			if a.AllowVariableOperation(v.Namespace, v.Path, acl.VariablesCapList) {
				m := v.VariableMetadata
				reply.Data = append(reply.Data, &m)
				idx = max(idx, m.ModifyIndex)
			}
		}
		if idx == 0 {
			return st.Index(state.TableVariables)
		}
		return idx, nil
	})
}

// AllocRead is a client's read for a template: the node proves itself
// with its secret, the allocation must be on it, and the path must be
// one of the allocation's task's implicit paths (Nomad's workload
// identity default policy).
func (e *variablesEndpoint) AllocRead(args *structs.VariablesAllocRequest, reply *structs.VariablesAllocResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCVariablesAllocRead, &err)
	if done, err := s.forward(structs.RPCVariablesAllocRead, args, reply); done {
		return err
	}
	alloc, err := s.authorizeAllocVariables(structs.RPCVariablesAllocRead, args)
	if err != nil {
		return err
	}
	jobID, err := workloadJobID(alloc)
	if err != nil {
		return err
	}
	if !structs.WorkloadMayRead(args.Path, jobID, alloc.TaskGroup, args.Task) {
		return fmt.Errorf("%w: task %q of job %q may read only %s", structs.ErrPermissionDenied,
			args.Task, jobID, strings.Join(structs.WorkloadVariablePrefixes(jobID, alloc.TaskGroup, args.Task), ", "))
	}
	return s.readVariable(args.QueryOptions, &reply.QueryMeta, alloc.Namespace, args.Path, &reply.Data)
}

// AllocList lists, with their items, the variables under Path that the
// allocation's task may read.
func (e *variablesEndpoint) AllocList(args *structs.VariablesAllocRequest, reply *structs.VariablesAllocResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCVariablesAllocList, &err)
	if done, err := s.forward(structs.RPCVariablesAllocList, args, reply); done {
		return err
	}
	alloc, err := s.authorizeAllocVariables(structs.RPCVariablesAllocList, args)
	if err != nil {
		return err
	}
	jobID, err := workloadJobID(alloc)
	if err != nil {
		return err
	}
	var sealed []*structs.VariableEncrypted
	err = s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		vars, err := st.Variables(ws, alloc.Namespace, args.Path)
		sealed = sealed[:0]
		for _, v := range vars {
			if structs.WorkloadMayRead(v.Path, jobID, alloc.TaskGroup, args.Task) {
				sealed = append(sealed, v)
			}
		}
		if err != nil {
			return 0, err
		}
		return st.Index(state.TableVariables)
	})
	if err != nil {
		return err
	}
	reply.List = []*structs.VariableDecrypted{}
	for _, v := range sealed {
		d, err := s.openVariable(v)
		if err != nil {
			return err
		}
		reply.List = append(reply.List, d)
	}
	return nil
}

// workloadJobID is the job whose variables an allocation's tasks read:
// for a periodic or dispatched child its first parent's, so that every
// launch reads nomad/jobs/<parent> (Nomad's workload identity names the
// parent). A job ID with '/' that is not a child's is refused: its paths
// would be those of another job's group.
func workloadJobID(alloc *structs.Allocation) (string, error) {
	id, ok := structs.WorkloadJobID(alloc.JobID)
	if !ok {
		return "", fmt.Errorf("%w: job %q is not a periodic or dispatched child: its tasks read no variables", structs.ErrPermissionDenied, alloc.JobID)
	}
	return id, nil
}

// authorizeAllocVariables checks a node's variable request: its secret,
// and that the allocation is on it.
func (s *Server) authorizeAllocVariables(method string, args *structs.VariablesAllocRequest) (*structs.Allocation, error) {
	if args.NodeID == "" || args.NodeSecret == "" {
		return nil, fmt.Errorf("%w: %s: missing node ID or secret", structs.ErrPermissionDenied, method)
	}
	if err := s.authorizeNode(method, args.NodeID, args.NodeSecret); err != nil {
		return nil, err
	}
	if args.AllocID == "" || args.Task == "" {
		return nil, fmt.Errorf("%s: missing allocation or task: %w", method, structs.ErrInvalid)
	}
	alloc, err := s.State().AllocByID(nil, args.AllocID)
	if err != nil {
		return nil, err
	}
	if alloc == nil || alloc.NodeID != args.NodeID {
		s.logger.Warn("node call refused: allocation not on the node", "method", method, "node_id", args.NodeID, "alloc_id", args.AllocID)
		return nil, fmt.Errorf("%w: allocation %s is not on node %s", structs.ErrPermissionDenied, args.AllocID, args.NodeID)
	}
	if !allocHasTask(alloc, args.Task) {
		return nil, fmt.Errorf("%w: allocation %s has no task %q", structs.ErrPermissionDenied, args.AllocID, args.Task)
	}
	return alloc, nil
}

// allocHasTask reports whether the allocation's group has task.
func allocHasTask(alloc *structs.Allocation, task string) bool {
	if alloc.Job == nil {
		return false
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil {
		return false
	}
	for _, t := range tg.Tasks {
		if t.Name == task {
			return true
		}
	}
	return false
}
