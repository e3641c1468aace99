package events

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

func ev(topic, key, ns string, filterKeys ...string) structs.Event {
	return structs.Event{Topic: topic, Type: "T", Key: key, Namespace: ns, FilterKeys: filterKeys}
}

// next reads one batch, failing the test when none comes in a second.
func next(t *testing.T, s *Subscription) Batch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	b, err := s.Next(ctx, nil)
	if err != nil {
		t.Fatalf("next: %v", err)
	}
	return b
}

// none checks that no batch is ready.
func none(t *testing.T, s *Subscription) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b, err := s.Next(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("next: got %+v, %v, want nothing ready", b, err)
	}
}

func keys(b Batch) []string {
	var out []string
	for _, e := range b.Events {
		out = append(out, e.Topic+":"+e.Key)
	}
	return out
}

func TestFilter(t *testing.T) {
	batch := Batch{Index: 7, Events: []structs.Event{
		ev(structs.TopicJob, "web", "default"),
		ev(structs.TopicJob, "db", "prod"),
		ev(structs.TopicAllocation, "a1", "default", "web"),
		ev(structs.TopicNode, "n1", ""),
		ev(structs.TopicGPU, "GPU-1", "", "n1"),
	}}
	tests := []struct {
		name string
		req  structs.EventStreamRequest
		want []string
	}{
		{"no topics: all, default namespace", structs.EventStreamRequest{}, []string{"Job:web", "Allocation:a1", "Node:n1", "GPU:GPU-1"}},
		{"all namespaces", structs.EventStreamRequest{Namespace: "*"}, []string{"Job:web", "Job:db", "Allocation:a1", "Node:n1", "GPU:GPU-1"}},
		{"one namespace", structs.EventStreamRequest{Namespace: "prod", Topics: map[string][]string{"Job": {"*"}}}, []string{"Job:db"}},
		{"topic without keys", structs.EventStreamRequest{Topics: map[string][]string{"Node": nil}}, []string{"Node:n1"}},
		{"key", structs.EventStreamRequest{Namespace: "*", Topics: map[string][]string{"Job": {"db"}}}, []string{"Job:db"}},
		{"filter key", structs.EventStreamRequest{Topics: map[string][]string{"Allocation": {"web"}, "GPU": {"n1"}}}, []string{"Allocation:a1", "GPU:GPU-1"}},
		{"all topics, one key", structs.EventStreamRequest{Topics: map[string][]string{"*": {"web"}}}, []string{"Job:web", "Allocation:a1"}},
		{"no match", structs.EventStreamRequest{Topics: map[string][]string{"Job": {"nope"}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := newFilter(&tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(f.keep(batch, nil)); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFilterRefusesBadTopics(t *testing.T) {
	many := map[string][]string{"Job": make([]string, MaxTopics+1)}
	for _, topics := range []map[string][]string{{"Jobs": nil}, many} {
		_, err := NewBroker(Config{}).Subscribe("", &structs.EventStreamRequest{Topics: topics})
		if !errors.Is(err, structs.ErrInvalid) {
			t.Errorf("topics %d: got %v, want ErrInvalid", len(topics), err)
		}
	}
}

func TestAllowFiltersEvents(t *testing.T) {
	b := NewBroker(Config{})
	sub, err := b.Subscribe("", &structs.EventStreamRequest{Namespace: "*"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	b.Publish(1, []structs.Event{ev("Job", "secret", "prod")})
	b.Publish(2, []structs.Event{ev("Job", "web", "default"), ev("Job", "db", "prod")})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	got, err := sub.Next(ctx, func(e *structs.Event) bool { return e.Namespace == "default" })
	if err != nil {
		t.Fatal(err)
	}
	// Index 1 has nothing allowed: it is skipped, not sent empty.
	if got.Index != 2 || !slices.Equal(keys(got), []string{"Job:web"}) {
		t.Errorf("got index %d %v, want index 2 [Job:web]", got.Index, keys(got))
	}
}

func TestResumeAfterIndex(t *testing.T) {
	b := NewBroker(Config{BufferSize: 4})
	for i := uint64(10); i <= 18; i += 2 { // index 10 falls out of the ring
		b.Publish(i, []structs.Event{ev("Job", "j", "default")})
	}
	tests := []struct {
		name  string
		index uint64
		want  []uint64
	}{
		{"zero: everything held", 0, []uint64{12, 14, 16, 18}},
		{"after an index held", 14, []uint64{16, 18}},
		{"between indexes", 15, []uint64{16, 18}},
		{"after the last", 18, nil},
		{"older than the ring: from the oldest held", 3, []uint64{12, 14, 16, 18}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub, err := b.Subscribe("", &structs.EventStreamRequest{Index: tt.index})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			var got []uint64
			for range tt.want {
				got = append(got, next(t, sub).Index)
			}
			none(t, sub)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEventsCarryTheirIndex(t *testing.T) {
	b := NewBroker(Config{})
	sub, _ := b.Subscribe("", &structs.EventStreamRequest{})
	defer sub.Close()
	b.Publish(9, []structs.Event{ev("Job", "j", "default")})
	b.Publish(10, nil) // nothing: not kept
	if got := next(t, sub); got.Index != 9 || got.Events[0].Index != 9 {
		t.Errorf("got batch %d, event %d, want 9 and 9", got.Index, got.Events[0].Index)
	}
	none(t, sub)
}

func TestNextWaitsForPublish(t *testing.T) {
	b := NewBroker(Config{})
	sub, _ := b.Subscribe("", &structs.EventStreamRequest{})
	defer sub.Close()
	got := make(chan Batch)
	go func() {
		batch, _ := sub.Next(context.Background(), nil)
		got <- batch
	}()
	b.Publish(5, []structs.Event{ev("Node", "n", "")})
	if batch := <-got; batch.Index != 5 {
		t.Errorf("got index %d, want 5", batch.Index)
	}
}

// TestSlowSubscriberIsClosed: a subscriber that does not read while the
// ring wraps is ended with ErrFellBehind; the ring's memory stays its
// size.
func TestSlowSubscriberIsClosed(t *testing.T) {
	b := NewBroker(Config{BufferSize: 3})
	slow, _ := b.Subscribe("", &structs.EventStreamRequest{})
	defer slow.Close()
	for i := uint64(1); i <= 10; i++ {
		b.Publish(i, []structs.Event{ev("Job", "j", "default")})
	}
	if _, err := slow.Next(context.Background(), nil); !errors.Is(err, ErrFellBehind) {
		t.Errorf("slow subscriber: got %v, want ErrFellBehind", err)
	}
	if len(b.ring) != 3 {
		t.Errorf("ring holds %d slots, want 3", len(b.ring))
	}
}

func TestSubscriptionLimitAndClose(t *testing.T) {
	b := NewBroker(Config{MaxSubscriptions: 2})
	s1, _ := b.Subscribe("a", &structs.EventStreamRequest{})
	s2, _ := b.Subscribe("b", &structs.EventStreamRequest{})
	if _, err := b.Subscribe("c", &structs.EventStreamRequest{}); !errors.Is(err, ErrTooManySubscriptions) {
		t.Fatalf("third subscription: got %v, want ErrTooManySubscriptions", err)
	}
	s1.Close()
	s1.Close() // twice: frees one place only
	if got := b.Subscriptions(); got != 1 {
		t.Fatalf("subscriptions: got %d, want 1", got)
	}
	s3, err := b.Subscribe("c", &structs.EventStreamRequest{})
	if err != nil {
		t.Fatalf("subscription after a close: %v", err)
	}
	defer s3.Close()
	done := make(chan error)
	go func() {
		_, err := s2.Next(context.Background(), nil)
		done <- err
	}()
	b.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("waiting subscriber after Close: got %v, want ErrClosed", err)
	}
	if _, err := b.Subscribe("d", &structs.EventStreamRequest{}); !errors.Is(err, ErrClosed) {
		t.Errorf("subscribe after Close: got %v, want ErrClosed", err)
	}
}

// TestSubscriptionLimitPerOwner: one owner (a token, or every anonymous
// caller together) holds at most an eighth of the subscriptions, and
// others still get theirs.
func TestSubscriptionLimitPerOwner(t *testing.T) {
	b := NewBroker(Config{MaxSubscriptions: 16})
	var subs []*Subscription
	for range 2 {
		s, err := b.Subscribe("", &structs.EventStreamRequest{})
		if err != nil {
			t.Fatalf("anonymous subscription %d: %v", len(subs)+1, err)
		}
		subs = append(subs, s)
	}
	if _, err := b.Subscribe("", &structs.EventStreamRequest{}); !errors.Is(err, ErrTooManySubscriptions) {
		t.Fatalf("third anonymous subscription of 16 in all: %v, want ErrTooManySubscriptions", err)
	}
	if s, err := b.Subscribe("token", &structs.EventStreamRequest{}); err != nil {
		t.Fatalf("another owner: %v", err)
	} else {
		s.Close()
	}
	subs[0].Close()
	if _, err := b.Subscribe("", &structs.EventStreamRequest{}); err != nil {
		t.Errorf("anonymous subscription after one closed: %v", err)
	}
}
