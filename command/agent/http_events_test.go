package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// eventLog reads a Nomad client's event stream, remembering each event
// as "index Topic Type Key".
type eventLog struct {
	ch     <-chan *nomad.Events
	seen   []string
	events []nomad.Event
	last   uint64
}

func openStream(t *testing.T, ctx context.Context, c *nomad.Client, index uint64) *eventLog {
	t.Helper()
	ch, err := c.EventStream().Stream(ctx, map[nomad.Topic][]string{nomad.TopicAll: {"*"}}, index, &nomad.QueryOptions{Namespace: "*"})
	if err != nil {
		t.Fatalf("event stream from %d: %v", index, err)
	}
	return &eventLog{ch: ch}
}

// until reads frames until cond holds for an event, failing after 30 s.
func (l *eventLog) until(t *testing.T, what string, cond func(e *nomad.Event) bool) *nomad.Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case <-timeout:
			t.Fatalf("no %s in 30s; seen %v", what, l.seen)
		case f, ok := <-l.ch:
			if !ok {
				t.Fatalf("stream closed before %s; seen %v", what, l.seen)
			}
			if f.Err != nil {
				t.Fatalf("stream error before %s: %v", what, f.Err)
			}
			if f.Index <= l.last {
				t.Fatalf("frame index %d after %d: not increasing", f.Index, l.last)
			}
			l.last = f.Index
			var found *nomad.Event
			for i := range f.Events {
				e := &f.Events[i]
				l.seen = append(l.seen, fmt.Sprintf("%d %s %s %s", e.Index, e.Topic, e.Type, e.Key))
				l.events = append(l.events, *e)
				if found == nil && cond(e) {
					found = e
				}
			}
			if found != nil {
				return found
			}
		}
	}
}

// TestEventStream_NomadClient: the official Nomad client's EventStream
// receives a node's registration, a job's registration and its
// allocation running, and a stream resumed from the last index it read
// continues with no gap and no duplicate, as one uninterrupted stream.
func TestEventStream_NomadClient(t *testing.T) {
	a, base := newTestAgent(t)
	c, err := nomad.NewClient(&nomad.Config{Address: base})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	whole := openStream(t, ctx, c, 0)
	firstCtx, stopFirst := context.WithCancel(ctx)
	first := openStream(t, firstCtx, c, 0)

	node := first.until(t, "NodeRegistration", func(e *nomad.Event) bool { return e.Type == "NodeRegistration" })
	if n, err := node.Node(); err != nil || n.ID != node.Key || n.Status == "" {
		t.Errorf("node payload: %+v, %v; want the node", n, err)
	}
	if _, ok := node.Payload["Node"].(map[string]any)["SecretID"]; ok {
		t.Error("node payload carries the node's SecretID")
	}

	job := nomad.NewBatchJob("events", "events", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := nomad.NewTask("sleep", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"30"}).
		Require(&nomad.Resources{CPU: intp(100), MemoryMB: intp(64)})
	job.AddTaskGroup(nomad.NewTaskGroup("g", 1).AddTask(task))
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("register: %v", err)
	}
	reg := first.until(t, "JobRegistered", func(e *nomad.Event) bool { return e.Type == "JobRegistered" && e.Key == "events" })
	if j, err := reg.Job(); err != nil || j == nil || *j.ID != "events" {
		t.Errorf("job payload: %+v, %v", j, err)
	}
	running := first.until(t, "AllocationUpdated running", func(e *nomad.Event) bool {
		if e.Topic != nomad.TopicAllocation || e.Type != "AllocationUpdated" {
			return false
		}
		alloc, err := e.Allocation()
		if err != nil {
			t.Fatalf("allocation payload: %v", err)
		}
		return alloc.ClientStatus == "running" && alloc.JobID == "events"
	})
	if !slices.Contains(running.FilterKeys, "events") {
		t.Errorf("allocation event filter keys %v, want the job's ID", running.FilterKeys)
	}

	// Cut the first stream, change things, and resume after the last
	// index it read.
	stopFirst()
	for range first.ch { // drain what the client had buffered
	}
	if _, _, err := c.Jobs().Deregister("events", false, nil); err != nil {
		t.Fatalf("deregister: %v", err)
	}
	resumed := openStream(t, ctx, c, first.last)
	resumed.until(t, "JobDeregistered", func(e *nomad.Event) bool { return e.Type == "JobDeregistered" })
	whole.until(t, "JobDeregistered", func(e *nomad.Event) bool { return e.Type == "JobDeregistered" })

	joined := append(slices.Clone(first.seen), resumed.seen...)
	if !slices.Equal(joined, whole.seen) {
		t.Errorf("first stream then resumed:\n%s\nwant as one stream:\n%s", strings.Join(joined, "\n"), strings.Join(whole.seen, "\n"))
	}
	if a.server.EventSubscriptions() < 2 {
		t.Errorf("subscriptions: %d, want the two open streams", a.server.EventSubscriptions())
	}
}

// TestEventStream_HTTP: curl's view: NDJSON lines flushed as they come,
// 400 naming bad parameters, and a caller that goes frees its
// subscription (no goroutine left behind).
func TestEventStream_HTTP(t *testing.T) {
	a, base := newTestAgent(t)
	for _, q := range []string{"topic=Jobz", "index=-1", "topic=:x", "topic=" + strings.Repeat("Job&topic=", 64) + "Job"} {
		resp, err := http.Get(base + "/v1/event/stream?" + q)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%.40s: status %d %q, want 400", q, resp.StatusCode, body)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/event/stream?topic=Node", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "application/x-ndjson" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
	}
	line := make([]byte, 1<<20)
	n, err := resp.Body.Read(line)
	if err != nil || !strings.HasPrefix(string(line[:n]), `{"Index":`) || !strings.Contains(string(line[:n]), `"Type":"NodeRegistration"`) {
		t.Fatalf("first line: %q, %v", line[:n], err)
	}
	if got := a.server.EventSubscriptions(); got != 1 {
		t.Errorf("subscriptions while streaming: %d, want 1", got)
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for a.server.EventSubscriptions() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the subscription is still open 10s after the caller went")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func intp(i int) *int { return &i }

// TestEventStream_HTTPNeedsAToken: with ACLs on, a request without a
// token, or with one for another namespace, gets Nomad's one-line 403;
// the management token gets the stream.
func TestEventStream_HTTPNeedsAToken(t *testing.T) {
	_, base, mgmt := newACLAgent(t)
	nsOnly := createToken(t, base, mgmt, "elsewhere", `namespace "elsewhere" { policy = "write" }`)
	for _, token := range []string{"", nsOnly} {
		code, got := send(t, http.MethodGet, base+"/v1/event/stream?namespace=default", token, "")
		if code != http.StatusForbidden || strings.Count(got, "\n") != 1 {
			t.Errorf("token %.8q: %d %q, want a one-line 403", token, code, got)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/event/stream?topic=Node", nil)
	req.Header.Set("X-Nomad-Token", mgmt)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("management token: status %d, want 200", resp.StatusCode)
	}
}
