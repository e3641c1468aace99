// Package gpuhistory keeps a bounded utilisation history per GPU and
// decides which allocations leave the GPUs they hold idle.
//
// It is the pure core of the client's GPU history: the client samples
// its GPUs every interval (client/gpu_history.go) and hands each reading
// and its time to Record; History answers from what was recorded. It
// does no I/O, reads no clock and starts no goroutine. Memory is
// bounded: Window/Interval samples (at most
// structs.MaxGPUHistorySamples) per GPU the node reports.
package gpuhistory

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/droverhq/drover/structs"
)

// Config is the history's shape. Zero fields take the structs defaults.
type Config struct {
	Interval time.Duration
	Window   time.Duration
	// IdleWindow is how long every GPU an allocation holds must stay
	// under IdleThresholdPercent for the allocation to be idle.
	IdleWindow           time.Duration
	IdleThresholdPercent float64
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = structs.DefaultGPUHistoryInterval
	}
	if c.Window <= 0 {
		c.Window = structs.DefaultGPUHistoryWindow
	}
	if c.IdleWindow <= 0 {
		c.IdleWindow = structs.DefaultGPUIdleWindow
	}
	if c.IdleThresholdPercent <= 0 {
		c.IdleThresholdPercent = structs.GPUIdleThresholdPercent
	}
	return c
}

// Validate checks that the window holds at least one and at most
// structs.MaxGPUHistorySamples samples.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.Interval < structs.MinGPUHistoryInterval {
		return fmt.Errorf("gpu history interval %v is under the minimum %v", c.Interval, structs.MinGPUHistoryInterval)
	}
	if c.Window < c.Interval {
		return fmt.Errorf("gpu history window %v is shorter than its interval %v", c.Window, c.Interval)
	}
	if n := c.Window / c.Interval; n > structs.MaxGPUHistorySamples {
		return fmt.Errorf("gpu history window %v at interval %v is %d samples per GPU, over the limit %d", c.Window, c.Interval, n, structs.MaxGPUHistorySamples)
	}
	return nil
}

// Samples is how many samples per GPU the history keeps.
func (c Config) Samples() int {
	c = c.withDefaults()
	return int(min(c.Window/c.Interval, structs.MaxGPUHistorySamples))
}

// Recorder holds the history. It is safe for concurrent use.
type Recorder struct {
	cfg  Config
	size int

	mu    sync.Mutex
	rings map[string]*ring
	order []string // the GPUs of the last record, in the node's order
	// idleSince is, per GPU, the first of the unbroken run of samples
	// under the threshold that ends with the last one (absent: the
	// last sample was busy).
	idleSince map[string]int64
	// holds and heldSince are, per allocation of the last record, the
	// GPUs it holds and the time of the first record that saw it hold
	// them.
	holds     map[string][]string
	heldSince map[string]int64
	last      int64 // time of the last record, Unix nanoseconds
}

// New returns an empty Recorder. Validate cfg first: New caps an
// oversized window rather than failing.
func New(cfg Config) *Recorder {
	cfg = cfg.withDefaults()
	return &Recorder{
		cfg:       cfg,
		size:      cfg.Samples(),
		rings:     map[string]*ring{},
		idleSince: map[string]int64{},
		holds:     map[string][]string{},
		heldSince: map[string]int64{},
	}
}

// Config returns the recorder's settings, defaults filled in.
func (r *Recorder) Config() Config { return r.cfg }

// Record adds one reading of every GPU at now. known lists the node's
// GPUs in its order: one whose reading is missing from stats (it
// failed this time) keeps its history without a sample, and one no
// longer known loses it. holds maps each live allocation to the GPUs it
// holds; an allocation missing from it is forgotten.
func (r *Recorder) Record(now time.Time, stats []*structs.DeviceStats, known []string, holds map[string][]string) {
	ts := now.UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = ts
	seen := make(map[string]bool, len(known))
	r.order = r.order[:0]
	for _, id := range known {
		if !seen[id] {
			seen[id] = true
			r.order = append(r.order, id)
			if r.rings[id] == nil {
				r.rings[id] = newRing(r.size)
			}
		}
	}
	read := make(map[string]bool, len(stats))
	for _, s := range stats {
		if s == nil || !seen[s.ID] || read[s.ID] {
			continue
		}
		read[s.ID] = true
		rg := r.rings[s.ID]
		rg.simulated = s.Simulated
		rg.add(structs.GPUSample{Timestamp: ts, GPUUtilPercent: float32(s.GPUUtilPercent), MemoryUsedBytes: s.MemoryUsedBytes})
		if s.GPUUtilPercent >= r.cfg.IdleThresholdPercent {
			delete(r.idleSince, s.ID)
		} else if _, ok := r.idleSince[s.ID]; !ok {
			r.idleSince[s.ID] = ts
		}
	}
	for id := range r.rings {
		if !seen[id] {
			delete(r.rings, id)
			delete(r.idleSince, id)
		}
	}
	for a := range r.holds {
		if _, ok := holds[a]; !ok {
			delete(r.holds, a)
			delete(r.heldSince, a)
		}
	}
	for a, gpus := range holds {
		if prev, ok := r.holds[a]; !ok || !slices.Equal(prev, gpus) {
			r.heldSince[a] = ts // new, or holding other GPUs now
		}
		r.holds[a] = slices.Clone(gpus)
	}
}

// History answers the samples of the last window (0: all kept) of the
// GPUs in only, or of every GPU when only is nil, in the node's order.
// When the answer would pass structs.MaxGPUHistorySamples samples in
// all, consecutive samples are merged (the busiest of each run kept) so
// that it does not.
func (r *Recorder) History(only []string, window time.Duration) *structs.GPUHistoryResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	resp := &structs.GPUHistoryResponse{
		Interval:             r.cfg.Interval,
		Window:               r.cfg.Window,
		GPUs:                 []*structs.GPUHistory{},
		IdleWindow:           r.cfg.IdleWindow,
		IdleThresholdPercent: r.cfg.IdleThresholdPercent,
		IdleGPUs:             []string{},
	}
	from := int64(0)
	if window > 0 {
		from = r.last - window.Nanoseconds()
	}
	held := map[string]bool{}
	for _, gpus := range r.holds {
		for _, g := range gpus {
			held[g] = true
		}
	}
	total := 0
	for _, id := range r.order {
		if only != nil && !slices.Contains(only, id) {
			continue
		}
		rg := r.rings[id]
		h := &structs.GPUHistory{ID: id, Simulated: rg.simulated, Allocated: held[id], Samples: rg.since(from)}
		total += len(h.Samples)
		resp.GPUs = append(resp.GPUs, h)
	}
	if total > structs.MaxGPUHistorySamples {
		budget := max(structs.MaxGPUHistorySamples/len(resp.GPUs), 1) // per GPU
		for _, h := range resp.GPUs {
			h.Samples = merge(h.Samples, (len(h.Samples)+budget-1)/budget)
		}
	}
	return resp
}

// AllocHistory answers History for the GPUs an allocation holds (gpus,
// as its runner knows them) with its idle verdict.
func (r *Recorder) AllocHistory(allocID string, gpus []string, window time.Duration) *structs.GPUHistoryResponse {
	only := slices.Clone(gpus)
	if only == nil {
		only = []string{}
	}
	resp := r.History(only, window)
	resp.AllocID = allocID
	r.mu.Lock()
	defer r.mu.Unlock()
	resp.Idle, resp.IdleSince, resp.IdleGPUs = r.idle(allocID, gpus)
	return resp
}

// idle reports whether every GPU of gpus stayed under the threshold for
// the idle window while allocID held it, since when, and which GPUs
// did. An allocation that holds no GPU, or that the last record did not
// see hold these GPUs, is not idle.
func (r *Recorder) idle(allocID string, gpus []string) (bool, int64, []string) {
	idleGPUs := []string{}
	held, ok := r.heldSince[allocID]
	if !ok || !slices.Equal(r.holds[allocID], gpus) {
		return false, 0, idleGPUs
	}
	need := r.cfg.IdleWindow.Nanoseconds()
	var since int64
	for _, g := range gpus {
		s, ok := r.idleSince[g]
		if !ok {
			continue
		}
		s = max(s, held)
		// Up to the GPU's last reading, not the last record: readings
		// that failed are no evidence of idleness.
		if r.rings[g].lastAt()-s >= need {
			idleGPUs = append(idleGPUs, g)
			since = max(since, s)
		}
	}
	if len(gpus) == 0 || len(idleGPUs) != len(gpus) {
		return false, 0, idleGPUs
	}
	return true, since, idleGPUs
}

// merge replaces each run of per consecutive samples with one: the
// run's last time, its highest utilisation and memory use.
func merge(in []structs.GPUSample, per int) []structs.GPUSample {
	if per <= 1 {
		return in
	}
	out := make([]structs.GPUSample, 0, (len(in)+per-1)/per)
	for run := range slices.Chunk(in, per) {
		m := run[len(run)-1]
		for _, s := range run {
			m.GPUUtilPercent = max(m.GPUUtilPercent, s.GPUUtilPercent)
			m.MemoryUsedBytes = max(m.MemoryUsedBytes, s.MemoryUsedBytes)
		}
		out = append(out, m)
	}
	return out
}

// ring is a fixed-size circular buffer of one GPU's samples.
type ring struct {
	buf       []structs.GPUSample
	next, n   int
	simulated bool
}

func newRing(size int) *ring { return &ring{buf: make([]structs.GPUSample, max(size, 1))} }

// lastAt is the time of the newest sample, 0 without one.
func (g *ring) lastAt() int64 {
	if g == nil || g.n == 0 {
		return 0
	}
	return g.buf[(g.next-1+len(g.buf))%len(g.buf)].Timestamp
}

func (g *ring) add(s structs.GPUSample) {
	g.buf[g.next] = s
	g.next = (g.next + 1) % len(g.buf)
	g.n = min(g.n+1, len(g.buf))
}

// since returns a copy of the samples taken after from, oldest first.
func (g *ring) since(from int64) []structs.GPUSample {
	out := make([]structs.GPUSample, 0, g.n)
	start := (g.next - g.n + len(g.buf)) % len(g.buf)
	for i := range g.n {
		if s := g.buf[(start+i)%len(g.buf)]; s.Timestamp > from {
			out = append(out, s)
		}
	}
	return out
}
