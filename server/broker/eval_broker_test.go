package broker

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// fakeClock fires timers only when a test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Duration
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Duration
	f       func()
	stopped bool
	fired   bool
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now + d, f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.fired || t.stopped {
		return false
	}
	t.stopped = true
	return true
}

// Advance moves time on and runs the timers that came due, in order.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now += d
	var due []*fakeTimer
	for _, t := range c.timers {
		if !t.fired && !t.stopped && t.at <= c.now {
			t.fired = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at < due[j].at })
	for _, t := range due {
		t.f()
	}
}

const testNackTimeout = time.Minute

func newTestBroker(t *testing.T, limit int) (*EvalBroker, *fakeClock) {
	t.Helper()
	clock := &fakeClock{}
	b := NewEvalBroker(testNackTimeout, limit, nil, WithClock(clock))
	b.SetEnabled(true)
	return b, clock
}

func testEval(id, job, typ string, priority int) *structs.Evaluation {
	return &structs.Evaluation{
		ID: id, Namespace: structs.DefaultNamespace, JobID: job, Type: typ,
		Priority: priority, Status: structs.EvalStatusPending,
	}
}

// mustDequeue dequeues with a short deadline and fails the test if
// nothing is ready.
func mustDequeue(t *testing.T, b *EvalBroker, schedulers ...string) (*structs.Evaluation, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	e, token, err := b.Dequeue(ctx, schedulers)
	if err != nil {
		t.Fatalf("Dequeue(%v): %v", schedulers, err)
	}
	return e, token
}

// dequeueNone asserts that nothing of the types is ready right now.
func dequeueNone(t *testing.T, b *EvalBroker, schedulers ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if e, _, err := b.Dequeue(ctx, schedulers); err == nil {
		t.Fatalf("Dequeue(%v) = %s, want nothing ready", schedulers, e.ID)
	}
}

func TestEvalBroker_DequeueOrder(t *testing.T) {
	tests := []struct {
		name       string
		evals      []*structs.Evaluation
		schedulers []string
		want       []string
	}{
		{
			name: "priority then fifo",
			evals: []*structs.Evaluation{
				testEval("a", "j1", "service", 50), testEval("b", "j2", "service", 70),
				testEval("c", "j3", "service", 50), testEval("d", "j4", "service", 90),
			},
			schedulers: []string{"service"},
			want:       []string{"d", "b", "a", "c"},
		},
		{
			name: "across scheduler types",
			evals: []*structs.Evaluation{
				testEval("a", "j1", "batch", 50), testEval("b", "j2", "service", 50),
				testEval("c", "j3", "batch", 60), testEval("d", "j4", "service", 40),
			},
			schedulers: []string{"service", "batch"},
			want:       []string{"c", "a", "b", "d"},
		},
		{
			name: "only requested types",
			evals: []*structs.Evaluation{
				testEval("a", "j1", "system", 90), testEval("b", "j2", "batch", 10),
			},
			schedulers: []string{"batch"},
			want:       []string{"b"},
		},
		{
			name: "duplicate enqueue ignored",
			evals: []*structs.Evaluation{
				testEval("a", "j1", "batch", 50), testEval("a", "j1", "batch", 50),
			},
			schedulers: []string{"batch"},
			want:       []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := newTestBroker(t, 3)
			b.EnqueueAll(tt.evals)
			var got []string
			for range tt.want {
				e, _ := mustDequeue(t, b, tt.schedulers...)
				got = append(got, e.ID)
			}
			dequeueNone(t, b, tt.schedulers...)
			if !equal(got, tt.want) {
				t.Errorf("order = %v, want %v", got, tt.want)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEvalBroker_OnePerJob(t *testing.T) {
	b, _ := newTestBroker(t, 3)
	b.Enqueue(testEval("a", "web", "service", 50))
	b.Enqueue(testEval("b", "web", "service", 50))
	b.Enqueue(testEval("c", "web", "service", 80))
	b.Enqueue(testEval("other", "db", "service", 10))

	first, token := mustDequeue(t, b, "service")
	if first.ID != "a" {
		t.Fatalf("first = %s, want a", first.ID)
	}
	if got := b.Stats().TotalJobBlocked; got != 2 {
		t.Errorf("TotalJobBlocked = %d, want 2", got)
	}
	other, otherToken := mustDequeue(t, b, "service")
	if other.ID != "other" {
		t.Fatalf("second = %s, want other (web is in flight)", other.ID)
	}
	dequeueNone(t, b, "service")
	if err := b.Ack(other.ID, otherToken); err != nil {
		t.Fatal(err)
	}
	dequeueNone(t, b, "service")

	if err := b.Ack(first.ID, token); err != nil {
		t.Fatal(err)
	}
	next, token := mustDequeue(t, b, "service")
	if next.ID != "c" {
		t.Fatalf("after ack = %s, want c (highest pending priority)", next.ID)
	}
	dequeueNone(t, b, "service")
	if err := b.Ack(next.ID, token); err != nil {
		t.Fatal(err)
	}
	last, _ := mustDequeue(t, b, "service")
	if last.ID != "b" {
		t.Fatalf("last = %s, want b", last.ID)
	}
}

func TestEvalBroker_AckNackTokens(t *testing.T) {
	b, _ := newTestBroker(t, 3)
	b.Enqueue(testEval("a", "j", "batch", 50))
	e, token := mustDequeue(t, b, "batch")

	tests := []struct {
		name    string
		call    func() error
		wantErr error
	}{
		{"ack unknown eval", func() error { return b.Ack("nope", token) }, ErrNotOutstanding},
		{"ack wrong token", func() error { return b.Ack(e.ID, "stale") }, ErrTokenMismatch},
		{"nack wrong token", func() error { return b.Nack(e.ID, "stale") }, ErrTokenMismatch},
		{"reset wrong token", func() error { return b.OutstandingReset(e.ID, "stale") }, ErrTokenMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}

	if err := b.Nack(e.ID, token); err != nil {
		t.Fatalf("Nack: %v", err)
	}
	again, token2 := mustDequeue(t, b, "batch")
	if again.ID != e.ID || token2 == token {
		t.Fatalf("redelivery = %s token %s, want %s with a new token", again.ID, token2, e.ID)
	}
	if err := b.Ack(e.ID, token); !errors.Is(err, ErrTokenMismatch) {
		t.Errorf("ack with first token after redelivery: %v, want %v", err, ErrTokenMismatch)
	}
	if err := b.Ack(e.ID, token2); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if err := b.Ack(e.ID, token2); !errors.Is(err, ErrNotOutstanding) {
		t.Errorf("second ack: %v, want %v", err, ErrNotOutstanding)
	}
	if s := b.Stats(); s.TotalReady != 0 || s.TotalUnacked != 0 {
		t.Errorf("stats after ack = %+v, want empty", s)
	}
}

func TestEvalBroker_NackTimeout(t *testing.T) {
	b, clock := newTestBroker(t, 3)
	b.Enqueue(testEval("a", "j", "batch", 50))
	e, token := mustDequeue(t, b, "batch")

	clock.Advance(testNackTimeout / 2)
	if err := b.OutstandingReset(e.ID, token); err != nil {
		t.Fatal(err)
	}
	clock.Advance(testNackTimeout / 2)
	if s := b.Stats(); s.TotalUnacked != 1 || s.TotalReady != 0 {
		t.Fatalf("after reset and half a timeout: %+v, want still unacked", s)
	}
	clock.Advance(testNackTimeout / 2)
	if s := b.Stats(); s.TotalUnacked != 0 || s.TotalReady != 1 {
		t.Fatalf("after timeout: %+v, want ready again", s)
	}
	if err := b.Ack(e.ID, token); !errors.Is(err, ErrNotOutstanding) {
		t.Errorf("ack after timeout: %v, want %v", err, ErrNotOutstanding)
	}
	again, token := mustDequeue(t, b, "batch")
	if again.ID != "a" {
		t.Fatalf("redelivered %s, want a", again.ID)
	}
	if err := b.Ack(again.ID, token); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * testNackTimeout)
	if s := b.Stats(); s.TotalReady != 0 || s.TotalUnacked != 0 {
		t.Errorf("acked eval came back: %+v", s)
	}
}

func TestEvalBroker_DeliveryLimit(t *testing.T) {
	b, clock := newTestBroker(t, 2)
	b.Enqueue(testEval("a", "j", "batch", 50))
	b.Enqueue(testEval("b", "j", "batch", 50))

	e, token := mustDequeue(t, b, "batch")
	if err := b.Nack(e.ID, token); err != nil {
		t.Fatal(err)
	}
	_, _ = mustDequeue(t, b, "batch")
	clock.Advance(testNackTimeout) // the second delivery times out

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	failed, err := b.DequeueFailed(ctx)
	if err != nil {
		t.Fatalf("DequeueFailed: %v", err)
	}
	if failed.ID != "a" {
		t.Errorf("failed = %s, want a", failed.ID)
	}
	next, _ := mustDequeue(t, b, "batch")
	if next.ID != "b" {
		t.Errorf("after give-up = %s, want the job's next eval b", next.ID)
	}
}

func TestEvalBroker_Disabled(t *testing.T) {
	b, _ := newTestBroker(t, 3)
	b.Enqueue(testEval("a", "j1", "batch", 50))
	b.Enqueue(testEval("b", "j2", "batch", 50))
	e, token := mustDequeue(t, b, "batch")

	b.SetEnabled(false)
	if b.Enabled() {
		t.Fatal("Enabled() = true after SetEnabled(false)")
	}
	b.Enqueue(testEval("c", "j3", "batch", 50))
	if s := b.Stats(); s.TotalReady != 0 || s.TotalUnacked != 0 {
		t.Errorf("disabled broker holds %+v, want nothing", s)
	}
	if err := b.Ack(e.ID, token); !errors.Is(err, ErrNotOutstanding) {
		t.Errorf("ack after flush: %v, want %v", err, ErrNotOutstanding)
	}
	b.SetEnabled(true)
	dequeueNone(t, b, "batch")
}

func TestEvalBroker_DequeueWaits(t *testing.T) {
	b, _ := newTestBroker(t, 3)
	got := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e, _, err := b.Dequeue(ctx, []string{"service"})
		if err != nil {
			got <- err.Error()
			return
		}
		got <- e.ID
	}()
	b.Enqueue(testEval("x", "j", "batch", 50)) // wrong type: must not wake it for good
	b.Enqueue(testEval("a", "j2", "service", 50))
	if id := <-got; id != "a" {
		t.Errorf("waiting Dequeue got %s, want a", id)
	}
}

func TestEvalBroker_EnqueueWhileUnacked(t *testing.T) {
	b, _ := newTestBroker(t, 3)
	b.Enqueue(testEval("a", "j", "batch", 50))
	e, token := mustDequeue(t, b, "batch")

	updated := e.Copy()
	updated.Status = structs.EvalStatusBlocked
	b.Enqueue(updated)
	dequeueNone(t, b, "batch")
	if err := b.Ack(e.ID, token); err != nil {
		t.Fatal(err)
	}
	again, _ := mustDequeue(t, b, "batch")
	if again.ID != "a" || again.Status != structs.EvalStatusBlocked {
		t.Errorf("requeued = %s/%s, want a/blocked", again.ID, again.Status)
	}
}

func TestEvalBroker_Wait(t *testing.T) {
	b, clock := newTestBroker(t, 3)
	later := testEval("later", "j1", structs.JobTypeService, 50)
	later.Wait = 30 * time.Second
	b.Enqueue(later)
	b.Enqueue(later) // a duplicate while waiting is ignored
	if s := b.Stats(); s.TotalWaiting != 1 || s.TotalReady != 0 {
		t.Fatalf("stats while waiting: got %+v, want 1 waiting, none ready", s)
	}
	dequeueNone(t, b, structs.JobTypeService)

	clock.Advance(29 * time.Second)
	dequeueNone(t, b, structs.JobTypeService)
	clock.Advance(time.Second)
	e, token := mustDequeue(t, b, structs.JobTypeService)
	if e.ID != "later" {
		t.Fatalf("dequeued %s, want later", e.ID)
	}
	// A nack redelivers at once: the wait is over.
	if err := b.Nack(e.ID, token); err != nil {
		t.Fatal(err)
	}
	e, token = mustDequeue(t, b, structs.JobTypeService)
	if err := b.Ack(e.ID, token); err != nil {
		t.Fatal(err)
	}
	if s := b.Stats(); s.TotalWaiting != 0 || s.TotalReady != 0 || s.TotalUnacked != 0 {
		t.Errorf("stats after ack: got %+v, want empty", s)
	}
}

func TestEvalBroker_WaitingFlushedWhenDisabled(t *testing.T) {
	b, clock := newTestBroker(t, 3)
	e := testEval("later", "j1", structs.JobTypeService, 50)
	e.Wait = time.Second
	b.Enqueue(e)
	b.SetEnabled(false)
	b.SetEnabled(true)
	b.Enqueue(e) // the new leader restores it: it waits again from now
	clock.Advance(time.Second)
	mustDequeue(t, b, structs.JobTypeService)
	if s := b.Stats(); s.TotalWaiting != 0 || s.TotalReady != 0 {
		t.Errorf("stats: got %+v, want nothing left (the flushed timer must not enqueue twice)", s)
	}
}
