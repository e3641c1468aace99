package server

import (
	"fmt"
	"maps"
	"slices"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// nodeEndpoint serves the "Node" RPC methods, called by clients.
type nodeEndpoint struct{ srv *Server }

// Register stores the node as ready and starts its heartbeat timer. A
// re-registering node keeps the scheduling eligibility and drain flag
// operators set. When a device instance's health differs from the stored
// node's, every job with live allocations on the node gets a node-update
// evaluation in the same Raft entry; when the node is new, was not ready
// or changed what constraints see, so does every system and sysbatch job.
func (e *nodeEndpoint) Register(args *structs.NodeRegisterRequest, reply *structs.NodeUpdateResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCNodeRegister, &err)
	if done, err := s.forward(structs.RPCNodeRegister, args, reply); done {
		return err
	}
	if args.Node == nil || args.Node.ID == "" {
		return fmt.Errorf("register node: missing node ID: %w", structs.ErrInvalid)
	}
	if err := args.Node.CheckShape(); err != nil {
		return fmt.Errorf("register node: %w", err)
	}
	node := args.Node.Copy()
	if node.SecretID == "" {
		return fmt.Errorf("register node %s: missing node secret: %w", node.ID, structs.ErrInvalid)
	}
	s.heartbeats.statusMu.Lock()
	defer s.heartbeats.statusMu.Unlock()
	existing, err := s.State().NodeByID(nil, node.ID)
	if err != nil {
		return fmt.Errorf("register node %s: %w", node.ID, err)
	}
	if existing != nil {
		// A node is its secret: only it may register again.
		if err := s.authorizeNode(structs.RPCNodeRegister, node.ID, node.SecretID); err != nil {
			return err
		}
	}
	if existing != nil {
		node.Drain = existing.Drain
		if existing.SchedulingEligibility != "" {
			node.SchedulingEligibility = existing.SchedulingEligibility
		}
	}
	if node.SchedulingEligibility == "" {
		node.SchedulingEligibility = structs.NodeSchedulingEligible
	}
	node.Status = structs.NodeStatusReady
	node.StatusUpdatedAt = time.Now().UnixNano()
	if node.Datacenter == "" {
		node.Datacenter = s.config.Datacenter
	}
	req := &structs.NodeRegisterRequest{Node: node, WriteRequest: args.WriteRequest}
	id := deviceHealthChanged(existing, node)
	switch {
	case schedulingChanged(existing, node):
		// System jobs place on a node that joins or changed.
		req.Evals, err = s.nodeReadyEvals(node.ID)
	case id != "":
		// The scheduler replaces allocations holding an unhealthy GPU.
		req.Evals, err = s.nodeEvals(node.ID)
	}
	if err != nil {
		return fmt.Errorf("register node %s: %w", node.ID, err)
	}
	if id != "" {
		s.logger.Info("node device health changed", "node_id", node.ID, "device", id, "evals", len(req.Evals))
	}
	index, err := s.raftApply(structs.NodeRegisterRequestType, req)
	if err != nil {
		return fmt.Errorf("register node %s: %w", node.ID, err)
	}
	s.heartbeats.reset(node.ID, s.config.HeartbeatTTL)
	s.fillNodeResponse(reply, index)
	return nil
}

// UpdateStatus is the heartbeat (status ready): it resets the node's TTL
// and, when the node was down, stores it as ready again, with evaluations
// for the system and sysbatch jobs. Other statuses are stored with
// evaluations for the jobs on the node.
func (e *nodeEndpoint) UpdateStatus(args *structs.NodeUpdateStatusRequest, reply *structs.NodeUpdateResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCNodeUpdateStatus, &err)
	if done, err := s.forward(structs.RPCNodeUpdateStatus, args, reply); done {
		return err
	}
	status := args.Status
	if status == "" {
		status = structs.NodeStatusReady
	}
	switch status {
	case structs.NodeStatusReady, structs.NodeStatusDown, structs.NodeStatusInit:
	default:
		return fmt.Errorf("node %s: status %q: %w", args.NodeID, status, structs.ErrInvalid)
	}
	if err := s.authorizeNode(structs.RPCNodeUpdateStatus, args.NodeID, args.SecretID); err != nil {
		return err
	}
	s.heartbeats.statusMu.Lock()
	defer s.heartbeats.statusMu.Unlock()
	node, err := s.State().NodeByID(nil, args.NodeID)
	if err != nil {
		return fmt.Errorf("update node %s: %w", args.NodeID, err)
	}
	if node == nil {
		return fmt.Errorf("node %s: %w", args.NodeID, structs.ErrUnknownNode)
	}
	var index uint64
	if node.Status != status {
		req := &structs.NodeUpdateStatusRequest{
			NodeID: node.ID, Status: status, UpdatedAt: time.Now().UnixNano(), WriteRequest: args.WriteRequest,
		}
		switch status {
		case structs.NodeStatusDown:
			req.Evals, err = s.nodeEvals(node.ID)
		case structs.NodeStatusReady:
			// System jobs place on a node that is back.
			req.Evals, err = s.nodeReadyEvals(node.ID)
		}
		if err != nil {
			return fmt.Errorf("update node %s: %w", node.ID, err)
		}
		if index, err = s.raftApply(structs.NodeUpdateStatusLosingRequestType, req); err != nil {
			return fmt.Errorf("update node %s: %w", node.ID, err)
		}
	}
	if status == structs.NodeStatusDown {
		s.heartbeats.stop(node.ID)
	} else {
		s.heartbeats.reset(node.ID, s.config.HeartbeatTTL)
	}
	s.fillNodeResponse(reply, index)
	return nil
}

// fillNodeResponse answers a registration or heartbeat with the TTL, the
// RPC addresses of every server in the Raft configuration (so that a
// client configured with one server learns the others and can fail over
// to them), and the index.
func (s *Server) fillNodeResponse(reply *structs.NodeUpdateResponse, index uint64) {
	reply.HeartbeatTTL = s.config.HeartbeatTTL
	reply.Servers = s.Peers()
	if len(reply.Servers) == 0 {
		reply.Servers = []string{s.advertise.String()}
	}
	if index == 0 {
		index, _ = s.State().Index(state.TableNodes)
	}
	reply.Index = index
}

// GetAllocs returns every allocation of the node, blocking while
// MinQueryIndex is not below the index of the node's allocations.
func (e *nodeEndpoint) GetAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeAllocsResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCNodeGetAllocs, &err)
	if done, err := s.forward(structs.RPCNodeGetAllocs, args, reply); done {
		return err
	}
	if args.NodeID == "" {
		return fmt.Errorf("get allocs: missing node ID: %w", structs.ErrInvalid)
	}
	if err := s.authorizeNode(structs.RPCNodeGetAllocs, args.NodeID, args.SecretID); err != nil {
		return err
	}
	ctx, cancel := s.queryContext(args.QueryOptions)
	defer cancel()
	var allocs []*structs.Allocation
	index, err := s.State().BlockingQuery(ctx, args.MinQueryIndex, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		node, err := st.NodeByID(ws, args.NodeID)
		if err != nil {
			return 0, err
		}
		if node == nil {
			return 0, fmt.Errorf("node %s: %w", args.NodeID, structs.ErrUnknownNode)
		}
		if allocs, err = st.AllocsByNode(ws, args.NodeID); err != nil {
			return 0, err
		}
		return allocsIndex(st, allocs)
	})
	if err != nil {
		return fmt.Errorf("get allocs of node %s: %w", args.NodeID, err)
	}
	reply.Allocs = allocs
	reply.Index = index
	s.setQueryMeta(&reply.QueryMeta)
	return nil
}

// allocsIndex is the allocs table's index: at least the highest
// ModifyIndex of allocs, and past it once garbage collection deleted one
// of the node's allocations, so the node's client hears of the deletion
// and destroys what it kept of it (at least 1, so a first query returns).
func allocsIndex(st *state.StateStore, allocs []*structs.Allocation) (uint64, error) {
	var index uint64
	for _, a := range allocs {
		index = max(index, a.ModifyIndex)
	}
	table, err := st.Index(state.TableAllocs)
	if err != nil {
		return 0, err
	}
	return max(index, table, 1), nil
}

// UpdateAlloc stores what a client reports about its allocations. An
// allocation that failed gets an evaluation so the scheduler replaces it
// (when and whether is the scheduler's reschedule policy); one that
// started running while its job rolls out an update gets one so the next
// batch goes (rolling.go).
func (e *nodeEndpoint) UpdateAlloc(args *structs.AllocUpdateRequest, reply *structs.GenericResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCNodeUpdateAlloc, &err)
	if done, err := s.forward(structs.RPCNodeUpdateAlloc, args, reply); done {
		return err
	}
	if len(args.Alloc) == 0 {
		return fmt.Errorf("update allocs: no allocations: %w", structs.ErrInvalid)
	}
	if args.NodeID == "" {
		return fmt.Errorf("update allocs: missing node ID: %w", structs.ErrInvalid)
	}
	if err := s.authorizeNode(structs.RPCNodeUpdateAlloc, args.NodeID, args.SecretID); err != nil {
		return err
	}
	now := time.Now().UnixNano()
	updates := make([]*structs.Allocation, len(args.Alloc))
	for i, a := range args.Alloc {
		if updates[i], err = clientAllocUpdate(a); err != nil {
			return err
		}
		if err := s.checkAllocOwner(args.NodeID, updates[i].ID); err != nil {
			return err
		}
		updates[i].ModifyTime = now
	}
	evals, err := s.failedAllocEvals(updates, now)
	if err != nil {
		return fmt.Errorf("update allocs: %w", err)
	}
	rolling, err := s.rollingUpdateEvals(updates, evals, now)
	if err != nil {
		return fmt.Errorf("update allocs: %w", err)
	}
	evals = append(evals, rolling...)
	health, err := s.deploymentHealthEvals(updates, evals, now) // deployment_watcher.go
	if err != nil {
		return fmt.Errorf("update allocs: %w", err)
	}
	evals = append(evals, health...)
	req := &structs.AllocUpdateRequest{NodeID: args.NodeID, Alloc: updates, Evals: evals, WriteRequest: args.WriteRequest}
	index, err := s.raftApply(structs.AllocClientUpdateRequestType, req)
	if err != nil {
		return fmt.Errorf("update allocs: %w", err)
	}
	reply.Index = index
	return nil
}

// failedAllocEvals returns one alloc-failure evaluation per running
// service or batch job whose allocation the updates newly mark failed.
func (s *Server) failedAllocEvals(updates []*structs.Allocation, now int64) ([]*structs.Evaluation, error) {
	st := s.State()
	seen := map[[2]string]bool{}
	var evals []*structs.Evaluation
	for _, u := range updates {
		if u.ClientStatus != structs.AllocClientStatusFailed {
			continue
		}
		existing, err := st.AllocByID(nil, u.ID)
		if err != nil {
			return nil, err
		}
		if existing == nil || existing.ClientStatus == structs.AllocClientStatusFailed ||
			existing.DesiredStatus != structs.AllocDesiredStatusRun {
			continue
		}
		job, err := st.JobByID(nil, existing.Namespace, existing.JobID)
		if err != nil {
			return nil, err
		}
		key := [2]string{existing.Namespace, existing.JobID}
		if job == nil || job.Stop || seen[key] {
			continue
		}
		seen[key] = true
		eval := newJobEval(job, structs.EvalTriggerRetryFailed, now)
		eval.NodeID = existing.NodeID
		evals = append(evals, eval)
	}
	return evals, nil
}

// deviceHealthChanged returns the ID of a device instance whose health
// differs between the stored node (nil for a new node) and the
// registering one, or "". A device that appears counts when it is
// unhealthy; one that disappears always counts (allocations may hold it).
func deviceHealthChanged(old, cur *structs.Node) string {
	health := func(n *structs.Node) map[string]bool {
		m := map[string]bool{}
		if n == nil || n.NodeResources == nil {
			return m
		}
		for _, g := range n.NodeResources.Devices {
			for _, inst := range g.Instances {
				if inst != nil {
					m[inst.ID] = inst.Healthy
				}
			}
		}
		return m
	}
	before, after := health(old), health(cur)
	for _, id := range slices.Sorted(maps.Keys(after)) {
		was, ok := before[id]
		if (ok && was != after[id]) || (!ok && !after[id]) {
			return id
		}
	}
	for _, id := range slices.Sorted(maps.Keys(before)) {
		if _, ok := after[id]; !ok {
			return id
		}
	}
	return ""
}
