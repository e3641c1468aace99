package server

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestReads_StaleOnFollower: through a follower, a read without
// AllowStale is the leader's answer (LastContact 0) and one with it the
// follower's own (its contact with the leader). Cut off from the others,
// the follower still serves stale reads from its own state, saying it
// knows no leader, while consistent ones fail with ErrNoLeader; its
// Status.Peers answers its own view at once.
func TestReads_StaleOnFollower(t *testing.T) {
	const hold = 300 * time.Millisecond
	c := newTestCluster(t, 3, withServerConfig(func(_ int, cfg *Config) { cfg.RPCHoldTimeout = hold }))
	c.WaitForLeader(5 * time.Second)
	f := c.Followers()[0]
	nodeResp := registerNode(t, dialRPC(t, f.RPCAddr()), gpuNode("n1", 2))
	reg := registerJob(t, f, gpuJob("web", structs.JobTypeBatch, 1, 0))

	reads := []struct {
		name   string
		method string
		args   func(q structs.QueryOptions) any
		reply  func() any
		min    uint64 // the index the answer must reach
	}{
		{"job list", structs.RPCJobList, func(q structs.QueryOptions) any { return &structs.JobListRequest{QueryOptions: q} },
			func() any { return &structs.JobListResponse{} }, reg.Index},
		{"job", structs.RPCJobGetJob, func(q structs.QueryOptions) any { return &structs.JobSpecificRequest{JobID: "web", QueryOptions: q} },
			func() any { return &structs.SingleJobResponse{} }, reg.Index},
		{"eval", structs.RPCEvalGetEval, func(q structs.QueryOptions) any {
			return &structs.EvalSpecificRequest{EvalID: reg.EvalID, QueryOptions: q}
		},
			func() any { return &structs.SingleEvalResponse{} }, reg.Index},
		{"node list", structs.RPCNodeList, func(q structs.QueryOptions) any { return &structs.NodeListRequest{QueryOptions: q} },
			func() any { return &structs.NodeListResponse{} }, nodeResp.Index},
		// Nodes and allocations: the job's registration writes neither
		// (its allocation comes when the scheduler has placed it).
		{"gpu summary", structs.RPCGPUSummary, func(q structs.QueryOptions) any { return &structs.GenericRequest{QueryOptions: q} },
			func() any { return &structs.GPUSummaryResponse{} }, nodeResp.Index},
	}
	meta := func(reply any) structs.QueryMeta {
		return reflect.ValueOf(reply).Elem().FieldByName("QueryMeta").Interface().(structs.QueryMeta)
	}
	stale := func(allow bool) structs.QueryOptions { return structs.QueryOptions{AllowStale: allow} }
	for _, tt := range reads {
		consistent := tt.reply()
		err := f.RPC(tt.method, tt.args(stale(false)), consistent)
		if m := meta(consistent); err != nil || m.LastContact != 0 || !m.KnownLeader || m.Index < tt.min {
			t.Errorf("%s, consistent, through a follower: %+v, %v; want the leader's answer (contact 0) at >= %d", tt.name, m, err, tt.min)
		}
		waitFor(t, 5*time.Second, func() (bool, string) {
			reply := tt.reply()
			err := f.RPC(tt.method, tt.args(stale(true)), reply)
			m := meta(reply)
			return err == nil && m.LastContact > 0 && m.KnownLeader && m.Index >= tt.min,
				fmt.Sprintf("%s, stale, on a follower: %+v, %v; want its own answer (contact > 0) at >= %d", tt.name, m, err, tt.min)
		})
	}
	// The leader as the follower sees it: the cluster's current one (on a
	// loaded machine leadership may have moved since the start).
	waitFor(t, 5*time.Second, func() (bool, string) {
		var seen string
		var peers []string
		call(t, f, structs.RPCStatusLeader, &structs.GenericRequest{}, &seen)
		call(t, f, structs.RPCStatusPeers, &structs.GenericRequest{}, &peers)
		cur := c.WaitForLeader(5 * time.Second)
		return cur != f && seen == cur.RPCAddr().String() && len(peers) == 3,
			fmt.Sprintf("follower's Status.Leader %q and Peers %v, want %s and 3 peers", seen, peers, cur.RPCAddr())
	})

	c.Partition(c.Index(f))
	waitFor(t, 10*time.Second, func() (bool, string) {
		var resp structs.SingleJobResponse
		err := f.RPC(structs.RPCJobGetJob, &structs.JobSpecificRequest{JobID: "web", QueryOptions: structs.QueryOptions{AllowStale: true}}, &resp)
		return err == nil && resp.Job != nil && !resp.KnownLeader && resp.LastContact > raftHeartbeatTimeout,
			fmt.Sprintf("stale read on the cut-off follower: %+v, %v; want its own job, no known leader, an old contact", resp.QueryMeta, err)
	})
	if err := f.RPC(structs.RPCJobList, &structs.JobListRequest{}, &structs.JobListResponse{}); !errors.Is(err, structs.ErrNoLeader) {
		t.Errorf("consistent read on the cut-off follower: %v, want %v", err, structs.ErrNoLeader)
	}
	start := time.Now()
	var peers []string
	call(t, f, structs.RPCStatusPeers, &structs.GenericRequest{}, &peers)
	if took := time.Since(start); len(peers) != 3 || took >= hold {
		t.Errorf("cut-off follower's Status.Peers: %v after %v, want its 3 peers at once", peers, took)
	}
}
