package nvidia

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// eventRig is the DGX A100 mock with an event set whose Wait delivers
// what the test injects, and a clock the test moves.
type eventRig struct {
	lib     *server.Server
	devs    []*server.Device
	events  chan nvml.EventData
	changes chan HealthChange
	set     *mock.EventSet

	mu  sync.Mutex
	now time.Time
}

func newEventRig(t *testing.T) *eventRig {
	t.Helper()
	r := &eventRig{lib: dgxa100.New(), events: make(chan nvml.EventData, 4), changes: make(chan HealthChange, 8), now: time.Unix(1_700_000_000, 0)}
	r.devs = devices(t, r.lib)
	r.set = &mock.EventSet{
		WaitFunc: func(ms uint32) (nvml.EventData, nvml.Return) {
			select {
			case ev := <-r.events:
				return ev, nvml.SUCCESS
			case <-time.After(time.Duration(ms) * time.Millisecond):
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
		},
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
	}
	r.lib.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return r.set, nvml.SUCCESS }
	for _, d := range r.devs {
		d.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
	}
	return r
}

func (r *eventRig) clock() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

func (r *eventRig) advance(d time.Duration) {
	r.mu.Lock()
	r.now = r.now.Add(d)
	r.mu.Unlock()
}

func (r *eventRig) start(t *testing.T, recoverAfter time.Duration) *Watcher {
	t.Helper()
	w, err := StartWatcher(context.Background(), r.lib, WatcherConfig{
		RecoverAfter: recoverAfter,
		WaitTimeout:  5 * time.Millisecond,
		Now:          r.clock,
		OnChange:     func(c HealthChange) { r.changes <- c },
	})
	if err != nil {
		t.Fatalf("StartWatcher: %v", err)
	}
	t.Cleanup(w.Stop)
	return w
}

func (r *eventRig) xid(dev int, xid uint64) {
	r.events <- nvml.EventData{Device: r.devs[dev], EventType: nvml.EventTypeXidCriticalError, EventData: xid}
}

func (r *eventRig) next(t *testing.T) HealthChange {
	t.Helper()
	select {
	case c := <-r.changes:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no health change within 5s")
		return HealthChange{}
	}
}

// quiet asserts that no change is reported while the watcher handles
// what is queued: it waits until the injected events were consumed and
// a few more waits passed.
func (r *eventRig) quiet(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(r.events) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	waits := len(r.set.WaitCalls())
	for len(r.set.WaitCalls()) < waits+3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	select {
	case c := <-r.changes:
		t.Fatalf("unexpected health change %+v", c)
	default:
	}
}

func TestWatcherXID79MarksGPUUnhealthy(t *testing.T) {
	r := newEventRig(t)
	r.start(t, -1)
	if n := len(r.devs[0].RegisterEventsCalls()); n != 1 {
		t.Fatalf("RegisterEvents called %d times, want 1", n)
	}
	if got, want := r.devs[0].RegisterEventsCalls()[0].V, uint64(nvml.EventTypeXidCriticalError|nvml.EventTypeDoubleBitEccError); got != want {
		t.Errorf("registered event types = %#x, want %#x", got, want)
	}
	r.xid(3, 79)
	got := r.next(t)
	want := HealthChange{UUID: r.devs[3].UUID, Healthy: false, Reason: "XID 79: GPU has fallen off the bus"}
	if got != want {
		t.Errorf("change = %+v, want %+v", got, want)
	}
	// A second critical event on the same GPU is no new change.
	r.xid(3, 48)
	r.quiet(t)
}

func TestWatcherIgnoresNonCriticalXIDs(t *testing.T) {
	tests := []struct {
		name string
		xid  uint64
	}{
		{"graphics engine exception", 13},
		{"memory page fault", 31},
		{"GPU stopped processing", 43},
	}
	r := newEventRig(t)
	r.start(t, -1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.xid(2, tt.xid)
			r.quiet(t)
		})
	}
}

func TestWatcherDoubleBitECC(t *testing.T) {
	r := newEventRig(t)
	r.start(t, -1)
	r.events <- nvml.EventData{Device: r.devs[5], EventType: nvml.EventTypeDoubleBitEccError}
	if got := r.next(t); got.UUID != r.devs[5].UUID || got.Healthy || got.Reason != "double-bit ECC error" {
		t.Errorf("change = %+v, want GPU 5 unhealthy with a double-bit ECC error", got)
	}
}

// TestWatcherRecovers: a GPU quiet for RecoverAfter that answers a
// memory query is healthy again; one that does not answer stays out.
func TestWatcherRecovers(t *testing.T) {
	r := newEventRig(t)
	lost := true
	var mu sync.Mutex
	r.devs[1].GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		mu.Lock()
		defer mu.Unlock()
		if lost {
			return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST
		}
		return r.devs[1].MemoryInfo, nvml.SUCCESS
	}
	r.start(t, time.Minute)
	r.xid(1, 79)
	if got := r.next(t); got.Healthy {
		t.Fatalf("change = %+v, want unhealthy", got)
	}
	r.advance(30 * time.Second)
	r.quiet(t)
	r.advance(time.Minute)
	r.quiet(t) // still lost: no recovery
	mu.Lock()
	lost = false
	mu.Unlock()
	got := r.next(t)
	if got.UUID != r.devs[1].UUID || !got.Healthy {
		t.Errorf("change = %+v, want GPU 1 healthy", got)
	}
}

func TestWatcherNoDriverAndNoEvents(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	if _, err := StartWatcher(context.Background(), lib, WatcherConfig{}); !errors.Is(err, ErrNoDriver) {
		t.Errorf("no driver: err = %v, want ErrNoDriver", err)
	}
	r := newEventRig(t)
	for _, d := range r.devs {
		d.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.ERROR_NOT_SUPPORTED }
	}
	if _, err := StartWatcher(context.Background(), r.lib, WatcherConfig{}); !errors.Is(err, ErrNoEvents) {
		t.Errorf("no events: err = %v, want ErrNoEvents", err)
	}
	if n := len(r.lib.ShutdownCalls()); n != 1 {
		t.Errorf("Shutdown called %d times, want 1", n)
	}
}

func TestCriticalXID(t *testing.T) {
	for _, xid := range []uint64{48, 63, 64, 74, 79, 92, 94, 95} {
		if _, ok := CriticalXID(xid); !ok {
			t.Errorf("XID %d not critical", xid)
		}
	}
	for _, xid := range []uint64{13, 31, 43, 45, 68} {
		if r, ok := CriticalXID(xid); ok {
			t.Errorf("XID %d critical (%s), want not", xid, r)
		}
	}
}
