package nvidia

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/hashicorp/go-hclog"
)

// Health watching defaults (see WatcherConfig).
const (
	DefaultRecoverAfter = 5 * time.Minute
	DefaultWaitTimeout  = time.Second
)

// ErrNoEvents means no GPU accepted the event registration, so there is
// nothing to watch.
var ErrNoEvents = errors.New("nvidia: no GPU supports XID or ECC events")

// criticalXIDs are the XID errors that take a GPU out of service, from
// NVIDIA's XID catalog (docs.nvidia.com/deploy/xid-errors). XIDs caused by
// the application (13 graphics engine exception, 31 memory page fault,
// 43 GPU stopped processing, 45 preemptive cleanup, 68 video processor
// exception, ...) are not listed: they fail that task, not the GPU.
var criticalXIDs = map[uint64]string{
	48:  "double-bit ECC error",
	63:  "ECC page retirement or row remapping event",
	64:  "ECC page retirement or row remapping failure",
	74:  "NVLink error",
	79:  "GPU has fallen off the bus",
	92:  "high single-bit ECC error rate",
	94:  "contained ECC error",
	95:  "uncontained ECC error",
	119: "GSP RPC timeout",
	120: "GSP error",
}

// CriticalXID returns the reason a GPU is unhealthy after XID xid, or
// false when the XID does not make a GPU unhealthy.
func CriticalXID(xid uint64) (string, bool) {
	desc, ok := criticalXIDs[xid]
	if !ok {
		return "", false
	}
	return fmt.Sprintf("XID %d: %s", xid, desc), true
}

// HealthChange is a GPU becoming unhealthy or healthy again.
type HealthChange struct {
	UUID    string
	Healthy bool
	Reason  string
}

// WatcherConfig configures a Watcher.
type WatcherConfig struct {
	Logger hclog.Logger
	// RecoverAfter is the recovery check: an unhealthy GPU that had no
	// new critical event for this long and answers a memory info query
	// is healthy again. 0 is DefaultRecoverAfter; negative never
	// recovers (the GPU stays out until the agent restarts).
	RecoverAfter time.Duration
	// WaitTimeout bounds one wait for events, so Stop and recovery
	// checks are noticed; 0 is DefaultWaitTimeout.
	WaitTimeout time.Duration
	// Now is the clock for recovery; nil is time.Now.
	Now func() time.Time
	// OnChange is called, from the watcher's goroutine, for each change.
	OnChange func(HealthChange)
}

// Watcher follows NVML's critical XID and double-bit ECC events and
// reports GPU health changes. Its goroutine runs until Stop.
type Watcher struct {
	lib     nvml.Interface
	set     nvml.EventSet
	cfg     WatcherConfig
	logger  hclog.Logger
	devices map[string]nvml.Device // by UUID
	sick    map[string]time.Time   // unhealthy GPUs: last critical event
	cancel  context.CancelFunc
	done    chan struct{}
	stop    sync.Once
}

// StartWatcher initialises NVML, registers every GPU for critical XID and
// double-bit ECC events, and starts watching until ctx ends or Stop.
func StartWatcher(ctx context.Context, lib nvml.Interface, cfg WatcherConfig) (*Watcher, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.RecoverAfter == 0 {
		cfg.RecoverAfter = DefaultRecoverAfter
	}
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = DefaultWaitTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if ret := call0(lib.Init); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("%w: init: %v", ErrNoDriver, ret)
	}
	w := &Watcher{lib: lib, cfg: cfg, logger: cfg.Logger, devices: map[string]nvml.Device{}, sick: map[string]time.Time{}, done: make(chan struct{})}
	set, ret := call(lib.EventSetCreate)
	if ret != nvml.SUCCESS {
		w.shutdown()
		return nil, fmt.Errorf("nvidia: event set: %v", ret)
	}
	w.set = set
	if err := w.register(); err != nil {
		w.shutdown()
		return nil, err
	}
	ctx, w.cancel = context.WithCancel(ctx)
	go w.run(ctx)
	return w, nil
}

// register adds every GPU that supports them to the event set.
func (w *Watcher) register() error {
	count, ret := call(w.lib.DeviceGetCount)
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvidia: device count: %v", ret)
	}
	const want = nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError
	for i := 0; i < count; i++ {
		dev, ret := w.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		uuid, ret := call(dev.GetUUID)
		if ret != nvml.SUCCESS || uuid == "" {
			continue
		}
		types := uint64(want)
		if supported, ret := call(dev.GetSupportedEventTypes); ret == nvml.SUCCESS {
			types &= supported
		}
		if types == 0 {
			continue
		}
		if ret := call0(func() nvml.Return { return dev.RegisterEvents(types, w.set) }); ret != nvml.SUCCESS {
			w.logger.Warn("GPU health events unavailable", "uuid", uuid, "error", ret)
			continue
		}
		w.devices[uuid] = dev
	}
	if len(w.devices) == 0 {
		return ErrNoEvents
	}
	return nil
}

// Stop ends the watch, waits for its goroutine and releases NVML.
func (w *Watcher) Stop() {
	w.stop.Do(func() {
		w.cancel()
		<-w.done
		w.shutdown()
	})
}

func (w *Watcher) shutdown() {
	if w.set != nil {
		call0(w.set.Free)
	}
	if ret := call0(w.lib.Shutdown); ret != nvml.SUCCESS {
		w.logger.Warn("NVML shutdown", "error", ret)
	}
}

func (w *Watcher) run(ctx context.Context) {
	defer close(w.done)
	ms := uint32(w.cfg.WaitTimeout / time.Millisecond)
	for ctx.Err() == nil {
		ev, ret := call(func() (nvml.EventData, nvml.Return) { return w.set.Wait(ms) })
		switch ret {
		case nvml.SUCCESS:
			w.handle(ev)
		case nvml.ERROR_TIMEOUT:
		default:
			w.logger.Warn("waiting for GPU events", "error", ret)
			select {
			case <-ctx.Done():
			case <-time.After(w.cfg.WaitTimeout):
			}
		}
		w.maybeRecover()
	}
}

// handle marks the event's GPU unhealthy when the event is critical.
func (w *Watcher) handle(ev nvml.EventData) {
	if ev.Device == nil {
		return
	}
	uuid, ret := call(ev.Device.GetUUID)
	if ret != nvml.SUCCESS {
		return
	}
	var reason string
	switch {
	case ev.EventType&nvml.EventTypeDoubleBitEccError != 0:
		reason = "double-bit ECC error"
	case ev.EventType&nvml.EventTypeXidCriticalError != 0:
		r, ok := CriticalXID(ev.EventData)
		if !ok {
			w.logger.Debug("ignoring non-critical XID", "uuid", uuid, "xid", ev.EventData)
			return
		}
		reason = r
	default:
		return
	}
	_, already := w.sick[uuid]
	w.sick[uuid] = w.cfg.Now()
	if already {
		return
	}
	w.logger.Warn("GPU unhealthy", "uuid", uuid, "reason", reason)
	w.notify(HealthChange{UUID: uuid, Healthy: false, Reason: reason})
}

// maybeRecover marks healthy the GPUs quiet for RecoverAfter that answer
// a memory info query.
func (w *Watcher) maybeRecover() {
	if w.cfg.RecoverAfter < 0 {
		return
	}
	now := w.cfg.Now()
	for uuid, last := range w.sick {
		if now.Sub(last) < w.cfg.RecoverAfter {
			continue
		}
		dev := w.devices[uuid]
		if dev == nil {
			continue
		}
		if _, ret := call(dev.GetMemoryInfo); ret != nvml.SUCCESS {
			continue
		}
		delete(w.sick, uuid)
		reason := fmt.Sprintf("recovered: no critical event for %s", w.cfg.RecoverAfter)
		w.logger.Info("GPU healthy again", "uuid", uuid)
		w.notify(HealthChange{UUID: uuid, Healthy: true, Reason: reason})
	}
}

func (w *Watcher) notify(c HealthChange) {
	if w.cfg.OnChange != nil {
		w.cfg.OnChange(c)
	}
}
