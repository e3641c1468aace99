package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/droverhq/drover/structs"
)

// clusterCollector exports the cluster's figures from the leader's state
// store and broker when scraped, derived rather than kept: GPUs by model
// (counted exactly as /v1/gpus counts them), nodes by status, pending
// allocations by reason, the broker's queues, fair-share queues, quotas
// and GPU fragmentation (metrics_sched.go). A server that does not lead
// exports none of them, so a scrape of every server counts each GPU once.
// Timings (scheduler, plan submission) and heartbeats missed are
// go-metrics series the workers and the heartbeat timers emit.
type clusterCollector struct{ s *Server }

// MetricsCollector returns the server's Prometheus collector.
func (s *Server) MetricsCollector() prometheus.Collector { return clusterCollector{s: s} }

var (
	modelLabel = []string{"model"}

	gpusTotal     = prometheus.NewDesc("drover_gpus_total", "GPU instances the cluster's nodes report, by model.", modelLabel, nil)
	gpusAllocated = prometheus.NewDesc("drover_gpus_allocated", "GPU instances live allocations hold, by model.", modelLabel, nil)
	gpusFree      = prometheus.NewDesc("drover_gpus_free", "Healthy GPU instances no allocation holds on ready nodes, by model.", modelLabel, nil)
	gpusUnhealthy = prometheus.NewDesc("drover_gpus_unhealthy", "Unhealthy GPU instances, by model.", modelLabel, nil)
	gpuRatio      = prometheus.NewDesc("drover_gpu_allocation_ratio", "Allocated GPU instances over all of them (0 with none).", nil, nil)
	nodesDesc     = prometheus.NewDesc("drover_nodes", "Nodes by status.", []string{"status"}, nil)
	allocsPending = prometheus.NewDesc("drover_allocations_pending", "Allocations blocked evaluations could not place yet, by reason class (see PendingGang and the others).", []string{"reason"}, nil)
	evalsBlocked  = prometheus.NewDesc("drover_evals_blocked", "Blocked evaluations waiting for capacity.", nil, nil)
	brokerReady   = prometheus.NewDesc("drover_broker_ready", "Evaluations ready to be scheduled, by scheduler type.", []string{"scheduler"}, nil)
	brokerUnacked = prometheus.NewDesc("drover_broker_unacked", "Evaluations being scheduled, by scheduler type.", []string{"scheduler"}, nil)
	brokerWaiting = prometheus.NewDesc("drover_broker_waiting", "Evaluations whose wait has not passed.", nil, nil)
	brokerBehind  = prometheus.NewDesc("drover_broker_job_blocked", "Evaluations waiting behind another evaluation of their job.", nil, nil)
	brokerFailed  = prometheus.NewDesc("drover_broker_failed", "Evaluations the broker gave up on.", nil, nil)
	clusterDescs  = []*prometheus.Desc{
		gpusTotal, gpusAllocated, gpusFree, gpusUnhealthy, gpuRatio, nodesDesc, allocsPending, evalsBlocked,
		brokerReady, brokerUnacked, brokerWaiting, brokerBehind, brokerFailed,
	}
)

// Describe implements prometheus.Collector.
func (c clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range clusterDescs {
		ch <- d
	}
	for _, d := range schedDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c clusterCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	if !s.leading() {
		return
	}
	st := s.State()
	nodes, err := st.Nodes(nil)
	if err != nil {
		s.logger.Warn("metrics: list nodes", "error", err)
		return
	}
	held, err := heldGPUs(nil, st)
	if err != nil {
		s.logger.Warn("metrics: list allocations", "error", err)
		return
	}
	sum := summarizeGPUs(nodes, held)
	for _, m := range sum.Models {
		gaugeOf(ch, gpusTotal, float64(m.Total), m.Model)
		gaugeOf(ch, gpusAllocated, float64(m.Allocated), m.Model)
		gaugeOf(ch, gpusFree, float64(m.Free), m.Model)
		gaugeOf(ch, gpusUnhealthy, float64(m.Unhealthy), m.Model)
	}
	ratio := 0.0
	if sum.Total > 0 {
		ratio = float64(sum.Allocated) / float64(sum.Total)
	}
	gaugeOf(ch, gpuRatio, ratio)
	byStatus := map[string]int{structs.NodeStatusReady: 0, structs.NodeStatusDown: 0}
	for _, n := range nodes {
		byStatus[n.Status]++
	}
	for status, n := range byStatus {
		gaugeOf(ch, nodesDesc, float64(n), status)
	}
	c.collectEvals(ch)
	c.collectQueues(ch, st)
	c.collectQuotas(ch, st)
	c.collectFragmentation(ch, st)
}

// collectEvals exports pending allocations and the broker's queues.
func (c clusterCollector) collectEvals(ch chan<- prometheus.Metric) {
	s := c.s
	evals, err := s.State().Evals(nil, "*")
	if err != nil {
		s.logger.Warn("metrics: list evaluations", "error", err)
		return
	}
	for reason, n := range pendingByReason(evals) {
		gaugeOf(ch, allocsPending, float64(n), reason)
	}
	gaugeOf(ch, evalsBlocked, float64(s.blocked.Stats().TotalBlocked))
	bs := s.broker.Stats()
	for _, typ := range workerSchedulers {
		q := bs.ByScheduler[typ]
		gaugeOf(ch, brokerReady, float64(q.Ready), typ)
		gaugeOf(ch, brokerUnacked, float64(q.Unacked), typ)
	}
	gaugeOf(ch, brokerWaiting, float64(bs.TotalWaiting))
	gaugeOf(ch, brokerBehind, float64(bs.TotalJobBlocked))
	gaugeOf(ch, brokerFailed, float64(bs.TotalFailed))
}

func gaugeOf(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, lv ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
}
