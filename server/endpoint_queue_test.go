package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

func upsertQueue(t *testing.T, s *Server, q *structs.Queue) uint64 {
	t.Helper()
	var resp structs.GenericResponse
	if err := s.RPC(structs.RPCQueueUpsert, &structs.QueueUpsertRequest{Queue: q}, &resp); err != nil {
		t.Fatalf("Queue.Upsert: %v", err)
	}
	if resp.Index == 0 {
		t.Errorf("Queue.Upsert answered index 0")
	}
	return resp.Index
}

func queueList(t *testing.T, s *Server, q structs.QueryOptions) *structs.QueueListResponse {
	t.Helper()
	var list structs.QueueListResponse
	if err := s.RPC(structs.RPCQueueList, &structs.QueueListRequest{QueryOptions: q}, &list); err != nil {
		t.Fatalf("Queue.List: %v", err)
	}
	return &list
}

// TestServer_QueueUsageFollowsJobs runs a job in a queue through a real
// server (Raft, FSM, workers, plan applier): the queue's status shows the
// GPUs its allocations hold, its waiting job and its fair share, and a
// blocking read wakes when the job stops.
func TestServer_QueueUsageFollowsJobs(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	registerNode(t, c, gpuNode("n1", 2))
	upsertQueue(t, s, &structs.Queue{Name: "research", Weight: 3, GuaranteedGPUs: 1})
	upsertQueue(t, s, &structs.Queue{Name: "prod"})

	job := gpuJob("sweep", structs.JobTypeBatch, 3, 1)
	job.Queue = "research"
	registerJob(t, s, job)
	var research *structs.QueueStatus
	waitFor(t, 5*time.Second, func() (bool, string) {
		var got structs.SingleQueueResponse
		if err := s.RPC(structs.RPCQueueGet, &structs.QueueSpecificRequest{Name: "research"}, &got); err != nil {
			return false, err.Error()
		}
		research = got.Queue
		return research != nil && research.Usage.GPUs == 2 && research.Usage.Waiting == 1,
			"research does not hold 2 GPUs with 1 job waiting"
	})
	if research.Jobs != 1 || research.ClusterGPUs != 2 || research.FairShare != 2 || research.Queue.GuaranteedGPUs != 1 {
		t.Errorf("research = %+v, want 1 job, fair share 2 of 2 GPUs (the only active queue)", research)
	}

	list := queueList(t, s, structs.QueryOptions{})
	var names []string
	for _, q := range list.Queues {
		names = append(names, q.Queue.Name)
	}
	if strings.Join(names, ",") != "default,prod,research" || list.Index == 0 {
		t.Fatalf("Queue.List = %v at %d, want default,prod,research", names, list.Index)
	}
	if prod := list.Queues[1]; prod.FairShare != 0 || prod.Usage.GPUs != 0 {
		t.Errorf("idle prod = %+v, want no usage and no share", prod)
	}
	if p := queueList(t, s, structs.QueryOptions{Prefix: "re"}); len(p.Queues) != 1 || p.Queues[0].FairShare != 2 {
		t.Errorf("Queue.List prefix re = %+v, want research alone with its share", p.Queues)
	}

	// A blocking read at the current index returns once the job stops
	// and its GPUs come back.
	done := make(chan *structs.QueueListResponse, 1)
	go func() {
		var resp structs.QueueListResponse
		err := s.RPC(structs.RPCQueueList, &structs.QueueListRequest{QueryOptions: structs.QueryOptions{
			MinQueryIndex: list.Index, MaxQueryTime: 10 * time.Second}}, &resp)
		if err != nil {
			t.Errorf("blocking Queue.List: %v", err)
		}
		done <- &resp
	}()
	var dereg structs.JobDeregisterResponse
	if err := s.RPC(structs.RPCJobDeregister, &structs.JobDeregisterRequest{JobID: "sweep"}, &dereg); err != nil {
		t.Fatalf("Job.Deregister: %v", err)
	}
	select {
	case resp := <-done:
		if resp.Index <= list.Index {
			t.Errorf("blocking read answered index %d, want above %d", resp.Index, list.Index)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking Queue.List did not return after the job stopped")
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		st, err := s.State().QueueStatus(nil, "research")
		return err == nil && st.Usage.GPUs == 0, "research still holds GPUs after the stop"
	})
}

// TestServer_QueueRefusals: bad queues, deleting the default queue or one
// in use, and jobs in unknown queues are refused with ErrInvalid or
// ErrNotFound and change nothing.
func TestServer_QueueRefusals(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	upsertQueue(t, s, &structs.Queue{Name: "research"})
	job := gpuJob("sweep", structs.JobTypeBatch, 1, 0)
	job.Queue = "research"
	registerJob(t, s, job)
	before, err := s.State().Index(state.TableQueues)
	if err != nil {
		t.Fatal(err)
	}

	lost := gpuJob("lost", structs.JobTypeBatch, 1, 0)
	lost.Queue = "nope"
	var gen structs.GenericResponse
	tests := []struct {
		name   string
		method string
		args   any
		reply  any
		want   error
		msg    string
	}{
		{"job in an unknown queue", structs.RPCJobRegister, &structs.JobRegisterRequest{Job: lost}, &structs.JobRegisterResponse{}, structs.ErrInvalid, `queue "nope" does not exist`},
		{"plan of a job in an unknown queue", structs.RPCJobPlan, &structs.JobPlanRequest{Job: lost}, &structs.JobPlanResponse{}, structs.ErrInvalid, `queue "nope" does not exist`},
		{"missing queue", structs.RPCQueueUpsert, &structs.QueueUpsertRequest{}, &gen, structs.ErrInvalid, "missing"},
		{"weight over 1000", structs.RPCQueueUpsert, &structs.QueueUpsertRequest{Queue: &structs.Queue{Name: "q", Weight: 5000}}, &gen, structs.ErrInvalid, "weight 5000: want 1 to 1000"},
		{"max below guaranteed", structs.RPCQueueUpsert, &structs.QueueUpsertRequest{Queue: &structs.Queue{Name: "q", GuaranteedGPUs: 4, MaxGPUs: 2}}, &gen, structs.ErrInvalid, "max GPUs 2 is below the 4 guaranteed"},
		{"bad name", structs.RPCQueueUpsert, &structs.QueueUpsertRequest{Queue: &structs.Queue{Name: "a b"}}, &gen, structs.ErrInvalid, "letters, digits or dashes"},
		{"delete default", structs.RPCQueueDelete, &structs.QueueDeleteRequest{Name: "default"}, &gen, structs.ErrDefaultQueue, "cannot be deleted"},
		{"delete in use", structs.RPCQueueDelete, &structs.QueueDeleteRequest{Name: "research"}, &gen, structs.ErrQueueInUse, "1 job names it"},
		{"delete unknown", structs.RPCQueueDelete, &structs.QueueDeleteRequest{Name: "nope"}, &gen, structs.ErrNotFound, `queue "nope"`},
		{"delete without name", structs.RPCQueueDelete, &structs.QueueDeleteRequest{}, &gen, structs.ErrInvalid, "missing name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.RPC(tt.method, tt.args, tt.reply)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("got %v, want %v with %q", err, tt.want, tt.msg)
			}
		})
	}
	if after, _ := s.State().Index(state.TableQueues); after != before {
		t.Errorf("refused writes moved the queues index from %d to %d", before, after)
	}
	var got structs.SingleQueueResponse
	if err := s.RPC(structs.RPCQueueGet, &structs.QueueSpecificRequest{Name: "nope"}, &got); err != nil || got.Queue != nil {
		t.Errorf("Queue.Get of an unknown queue = %+v, %v; want nil", got.Queue, err)
	}
}
