package telemetry

import (
	armon "github.com/armon/go-metrics"
	metrics "github.com/hashicorp/go-metrics"
)

// armonSink hands what reaches armon/go-metrics' global (raft, serf,
// memberlist and raft-boltdb report there through go-metrics' compat
// package without the hashicorpmetrics build tag) to Drover's sinks.
type armonSink struct{ s metrics.MetricSink }

var _ armon.MetricSink = armonSink{}

func labels(in []armon.Label) []metrics.Label {
	out := make([]metrics.Label, len(in))
	for i, l := range in {
		out[i] = metrics.Label{Name: l.Name, Value: l.Value}
	}
	return out
}

func (a armonSink) SetGauge(key []string, val float32) { a.s.SetGauge(key, val) }
func (a armonSink) SetGaugeWithLabels(key []string, val float32, l []armon.Label) {
	a.s.SetGaugeWithLabels(key, val, labels(l))
}
func (a armonSink) EmitKey(key []string, val float32)     { a.s.EmitKey(key, val) }
func (a armonSink) IncrCounter(key []string, val float32) { a.s.IncrCounter(key, val) }
func (a armonSink) IncrCounterWithLabels(key []string, val float32, l []armon.Label) {
	a.s.IncrCounterWithLabels(key, val, labels(l))
}
func (a armonSink) AddSample(key []string, val float32) { a.s.AddSample(key, val) }
func (a armonSink) AddSampleWithLabels(key []string, val float32, l []armon.Label) {
	a.s.AddSampleWithLabels(key, val, labels(l))
}
