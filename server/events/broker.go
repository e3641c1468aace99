// Package events is a server's event buffer: the FSM publishes the
// events of each applied Raft index into a bounded ring, and event
// stream subscribers read from it with topic, key and namespace
// filters, resuming after an index.
//
// It owns no goroutine and does no I/O: subscribers block in Next on
// their own goroutine. Memory is bounded by the ring's size in indexes;
// a subscriber that falls further behind than the ring holds is closed
// with ErrFellBehind instead of holding old events alive. It knows
// nothing of Raft, ACLs or encodings: the server filters events by the
// subscriber's token (Subscription's allow function) and encodes them.
package events

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/droverhq/drover/structs"
)

// DefaultBufferSize is the default number of indexes the ring keeps
// (Nomad's event_buffer_size, also counted in indexes).
const DefaultBufferSize = 100

// DefaultMaxSubscriptions is the default bound on open subscriptions.
const DefaultMaxSubscriptions = 1000

// Errors a subscription ends with.
var (
	// ErrFellBehind: the subscriber did not read the batches it was due
	// before the ring dropped them.
	ErrFellBehind = structs.NewCodedError(structs.CodeUnavailable, "event subscription fell behind the event buffer")
	// ErrClosed: the broker was closed (the server is shutting down).
	ErrClosed = structs.NewCodedError(structs.CodeUnavailable, "event broker closed")
	// ErrTooManySubscriptions: the broker has its limit of open
	// subscriptions.
	ErrTooManySubscriptions = structs.NewCodedError(structs.CodeUnavailable, "too many event subscriptions")
)

// Batch is the events of one Raft index.
type Batch struct {
	Index  uint64
	Events []structs.Event
}

// Broker holds the ring of the last batches published and the open
// subscriptions' count. It is safe for concurrent use; Publish is called
// by the one FSM goroutine.
type Broker struct {
	size    int
	maxSubs int

	mu sync.Mutex
	// ring holds batches by sequence number seq at ring[seq%size]; the
	// batches held are seqs [next-held, next).
	ring []Batch
	next uint64
	held int
	// published is closed and replaced by each Publish and by Close.
	published chan struct{}
	closed    bool
	subs      int
	// byOwner counts the open subscriptions of each owner (a token, or
	// all anonymous callers together), each at most maxPerOwner.
	byOwner     map[string]int
	maxPerOwner int
}

// ownerShare is the part of MaxSubscriptions one owner may hold, so that
// one token, or anonymous callers, cannot take every slot.
const ownerShare = 8

// Config sizes a broker; zero fields take the defaults.
type Config struct {
	// BufferSize is how many indexes' batches the ring keeps.
	BufferSize int
	// MaxSubscriptions bounds the open subscriptions.
	MaxSubscriptions int
}

// NewBroker returns an empty broker.
func NewBroker(cfg Config) *Broker {
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = DefaultBufferSize
	}
	if cfg.MaxSubscriptions <= 0 {
		cfg.MaxSubscriptions = DefaultMaxSubscriptions
	}
	return &Broker{
		size:        cfg.BufferSize,
		maxSubs:     cfg.MaxSubscriptions,
		byOwner:     map[string]int{},
		maxPerOwner: max(1, cfg.MaxSubscriptions/ownerShare),
		ring:        make([]Batch, cfg.BufferSize),
		published:   make(chan struct{}),
	}
}

// Publish adds the events of index to the ring, dropping the oldest
// batch when it is full, and wakes the subscribers. Events without one
// carry index. An empty batch is not kept.
func (b *Broker) Publish(index uint64, events []structs.Event) {
	if len(events) == 0 {
		return
	}
	for i := range events {
		if events[i].Index == 0 {
			events[i].Index = index
		}
		events[i].ShareJSON() // encoded once, by the first subscriber to send it
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.ring[b.next%uint64(b.size)] = Batch{Index: index, Events: events}
	b.next++
	b.held = min(b.held+1, b.size)
	close(b.published)
	b.published = make(chan struct{})
}

// Close ends every subscription with ErrClosed and refuses new ones.
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.published)
}

// Subscriptions returns the number of open subscriptions.
func (b *Broker) Subscriptions() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.subs
}

// Subscribe opens a subscription to the batches after index: every
// batch still in the ring with a greater index, then each new one. When
// batches after index were already dropped, it starts from the oldest
// batch held (as Nomad does); the gap is not reported. Index 0 starts
// from the oldest batch held. allow, when not nil, is asked about each
// event the filter selects; the subscription sends only those it allows.
//
// owner names who subscribes (the server passes a digest of the token,
// "" for anonymous callers): one owner holds at most an eighth of the
// subscriptions (at least one).
func (b *Broker) Subscribe(owner string, req *structs.EventStreamRequest) (*Subscription, error) {
	f, err := newFilter(req)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	if b.subs >= b.maxSubs {
		return nil, fmt.Errorf("%w: the limit is %d (event_max_subscriptions)", ErrTooManySubscriptions, b.maxSubs)
	}
	if b.byOwner[owner] >= b.maxPerOwner {
		return nil, fmt.Errorf("%w: one token may hold %d of the %d (event_max_subscriptions / %d)",
			ErrTooManySubscriptions, b.maxPerOwner, b.maxSubs, ownerShare)
	}
	b.subs++
	b.byOwner[owner]++
	seq := b.next - uint64(b.held)
	for seq < b.next && b.ring[seq%uint64(b.size)].Index <= req.Index {
		seq++
	}
	return &Subscription{b: b, owner: owner, filter: f, next: seq}, nil
}

// Subscription reads batches from a broker, filtered. It is for one
// goroutine; Close releases its place.
type Subscription struct {
	b      *Broker
	owner  string
	filter *filter
	next   uint64 // the seq of the next batch to read
	closed bool
}

// Next returns the next batch with events the subscription selects and
// allow admits (allow nil admits all), waiting for one until ctx ends.
// The batch's events are the selected ones only. It fails with
// ErrFellBehind when the ring dropped a batch not yet read, with
// ErrClosed when the broker closed, and with ctx's error.
func (s *Subscription) Next(ctx context.Context, allow func(*structs.Event) bool) (Batch, error) {
	for {
		batch, wait, err := s.take()
		if err != nil {
			return Batch{}, err
		}
		if wait == nil {
			if out := s.filter.keep(batch, allow); len(out.Events) > 0 {
				return out, nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return Batch{}, ctx.Err()
		case <-wait:
		}
	}
}

// take returns the next batch, or the channel to wait on for one.
func (s *Subscription) take() (Batch, <-chan struct{}, error) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case s.closed:
		return Batch{}, nil, errors.New("event subscription: read after Close")
	case b.closed:
		return Batch{}, nil, ErrClosed
	case s.next < b.next-uint64(b.held):
		return Batch{}, nil, fmt.Errorf("%w: it keeps the last %d indexes", ErrFellBehind, b.size)
	case s.next == b.next:
		return Batch{}, b.published, nil
	}
	batch := b.ring[s.next%uint64(b.size)]
	s.next++
	return batch, nil, nil
}

// Close releases the subscription's place; calling it again does
// nothing.
func (s *Subscription) Close() {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	b.subs--
	if b.byOwner[s.owner]--; b.byOwner[s.owner] <= 0 {
		delete(b.byOwner, s.owner)
	}
}
