// Package telemetry owns an agent's metrics: the go-metrics sinks (an
// in-memory one for /v1/metrics' JSON, a Prometheus one for
// ?format=prometheus), the registry that scrape-time collectors join,
// and the dcgm-exporter names and labels of the GPU series (dcgm.go).
//
// It reads no cluster or node state itself: the server and the client
// bring collectors that read theirs when scraped. Metrics that go-metrics
// carries (raft's, serf's, the scheduler's timings) get the "drover"
// prefix; collector series are exported exactly as their collectors name
// them, so GPU series look like dcgm-exporter's.
package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"time"

	armon "github.com/armon/go-metrics"
	metrics "github.com/hashicorp/go-metrics"
	gmprom "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// ServiceName prefixes every go-metrics key ("drover.raft.commitTime",
// drover_raft_commitTime in Prometheus).
const ServiceName = "drover"

// Defaults, as in Nomad's telemetry block.
const (
	DefaultCollectionInterval = time.Second
	// inmemInterval and inmemRetain shape the JSON answer: the last
	// finished 10s interval of the last minute.
	inmemInterval = 10 * time.Second
	inmemRetain   = time.Minute
	// promExpiration drops a go-metrics series to Prometheus that was not
	// updated for this long (a finished job's labels, say).
	promExpiration = time.Minute
)

// Config is the telemetry block.
type Config struct {
	// PrometheusMetrics serves /v1/metrics?format=prometheus.
	PrometheusMetrics bool
	// CollectionInterval is how often runtime metrics (goroutines,
	// memory, GC) are sampled; 0 is DefaultCollectionInterval.
	CollectionInterval time.Duration
	// DisableHostname keeps the host name out of gauge names (go-metrics
	// prefixes gauges with it by default, as Nomad does).
	DisableHostname bool
	// HostName overrides os.Hostname for the gauge prefix.
	HostName string
}

// Telemetry is one agent's metrics: sinks, collectors and the runtime
// sampler. Shutdown stops the sampler.
type Telemetry struct {
	cfg        Config
	metrics    *metrics.Metrics
	inmem      *metrics.InmemSink
	sinkReg    *prometheus.Registry // go-metrics' Prometheus sink; nil when off
	collectors *prometheus.Registry // scrape-time collectors
	stop       context.CancelFunc
	done       chan struct{}
}

// New builds the sinks and makes them the process's go-metrics global,
// under both import paths: hashicorp/go-metrics (Drover's own code) and
// armon/go-metrics, where raft, serf, memberlist and raft-boltdb report
// through go-metrics' compat package unless built with the
// hashicorpmetrics tag. Registering both means no build tag is needed
// and, with the tag, nothing changes. The last New in a process wins
// the globals (tests that run several agents in one process share
// them).
func New(cfg Config) (*Telemetry, error) {
	if cfg.CollectionInterval <= 0 {
		cfg.CollectionInterval = DefaultCollectionInterval
	}
	if cfg.HostName == "" {
		cfg.HostName, _ = os.Hostname()
	}
	t := &Telemetry{
		cfg:        cfg,
		inmem:      metrics.NewInmemSink(inmemInterval, inmemRetain),
		collectors: prometheus.NewRegistry(),
		done:       make(chan struct{}),
	}
	sinks := metrics.FanoutSink{t.inmem}
	ctx, cancel := context.WithCancel(context.Background())
	t.stop = cancel
	if cfg.PrometheusMetrics {
		t.sinkReg = prometheus.NewRegistry()
		ps, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
			Expiration: promExpiration,
			Registerer: t.sinkReg,
			Name:       "drover_go_metrics_sink",
		})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("prometheus sink: %w", err)
		}
		ps.RunBackgroundCleanup(ctx)
		sinks = append(sinks, ps)
	}
	mc := metrics.DefaultConfig(ServiceName)
	mc.HostName = cfg.HostName
	mc.EnableHostname = !cfg.DisableHostname
	mc.EnableRuntimeMetrics = false // sampled below, with a stop
	m, err := metrics.NewGlobal(mc, sinks)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("go-metrics: %w", err)
	}
	t.metrics = m
	ac := armon.DefaultConfig(ServiceName)
	ac.HostName = cfg.HostName
	ac.EnableHostname = !cfg.DisableHostname
	ac.EnableRuntimeMetrics = false
	if _, err := armon.NewGlobal(ac, armonSink{sinks}); err != nil {
		cancel()
		return nil, fmt.Errorf("armon go-metrics: %w", err)
	}
	go t.sampleRuntime(ctx)
	return t, nil
}

// sampleRuntime emits runtime metrics every collection interval until
// ctx ends.
func (t *Telemetry) sampleRuntime(ctx context.Context) {
	defer close(t.done)
	tick := time.NewTicker(t.cfg.CollectionInterval)
	defer tick.Stop()
	for {
		t.metrics.EmitRuntimeStats()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Shutdown stops the runtime sampler and the Prometheus sink's cleanup.
func (t *Telemetry) Shutdown() {
	t.stop()
	<-t.done
}

// Register adds a scrape-time collector: its series go to both formats
// exactly as it names them.
func (t *Telemetry) Register(c prometheus.Collector) error {
	return t.collectors.Register(c)
}

// PrometheusEnabled reports whether the telemetry block turned on
// prometheus_metrics.
func (t *Telemetry) PrometheusEnabled() bool { return t.sinkReg != nil }

// PrometheusHandler serves the Prometheus text format: go-metrics' sink,
// then the collectors. Call it only when PrometheusEnabled.
func (t *Telemetry) PrometheusHandler() http.Handler {
	return promhttp.HandlerFor(prometheus.Gatherers{t.sinkReg, t.collectors}, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// Summary is /v1/metrics' JSON in Nomad's shape: the in-memory sink's
// last finished interval, with the collectors' series appended to
// Gauges (counters among them as their current value).
func (t *Telemetry) Summary() (*metrics.MetricsSummary, error) {
	sum := &metrics.MetricsSummary{Timestamp: time.Now().UTC().Truncate(time.Second).String()}
	if v, err := t.inmem.DisplayMetrics(nil, nil); err == nil {
		if s, ok := v.(metrics.MetricsSummary); ok {
			sum = &s
		}
	}
	families, err := t.collectors.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			sum.Gauges = append(sum.Gauges, metrics.GaugeValue{
				Name: f.GetName(), Value: float32(metricValue(m)), DisplayLabels: labelMap(m),
			})
		}
	}
	orEmpty(sum)
	return sum, nil
}

// orEmpty makes nil lists empty, so they encode as [] as Nomad's do.
func orEmpty(s *metrics.MetricsSummary) {
	if s.Gauges == nil {
		s.Gauges = []metrics.GaugeValue{}
	}
	if s.PrecisionGauges == nil {
		s.PrecisionGauges = []metrics.PrecisionGaugeValue{}
	}
	if s.Points == nil {
		s.Points = []metrics.PointValue{}
	}
	if s.Counters == nil {
		s.Counters = []metrics.SampledValue{}
	}
	if s.Samples == nil {
		s.Samples = []metrics.SampledValue{}
	}
	sort.SliceStable(s.Gauges, func(i, j int) bool { return s.Gauges[i].Name < s.Gauges[j].Name })
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

func labelMap(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		if l.GetValue() != "" {
			out[l.GetName()] = l.GetValue()
		}
	}
	return out
}
