package server

import (
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/droverhq/drover/structs"
	"github.com/droverhq/drover/telemetry"
)

// gatherGauges returns name{labels} -> value of the collector's series,
// labels as k=v joined by commas in label order.
func gatherGauges(t testing.TB, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out[f.GetName()+"{"+strings.Join(ls, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestClusterMetrics places a GPU job and blocks another, then checks the
// leader's cluster series against /v1/gpus' summary and the blocked
// evaluation, and that the scheduler's timings reach the telemetry sinks.
func TestClusterMetrics(t *testing.T) {
	tm, err := telemetry.New(telemetry.Config{PrometheusMetrics: true, DisableHostname: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Shutdown()
	s := startServer(t, testConfig(t))
	conn := dialRPC(t, s.RPCAddr())
	for _, name := range []string{"n1", "n2"} {
		registerNode(t, conn, gpuNode(name, 4))
	}
	registerJob(t, s, gpuJob("train", structs.JobTypeService, 3, 2))
	registerJob(t, s, gpuJob("huge", structs.JobTypeService, 1, 16))
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := len(liveAllocs(t, s, "train"))
		return n == 3 && s.blocked.Stats().TotalBlocked == 1, fmt.Sprintf("%d allocations placed, %d evaluations blocked; want 3 and 1", n, s.blocked.Stats().TotalBlocked)
	})
	var sum structs.GPUSummaryResponse
	if err := s.RPC(structs.RPCGPUSummary, &structs.GenericRequest{}, &sum); err != nil {
		t.Fatal(err)
	}
	got := gatherGauges(t, s.MetricsCollector())
	const model = "{model=NVIDIA H100 80GB HBM3}"
	m := sum.Summary.Models[0]
	want := map[string]float64{
		"drover_gpus_total" + model:              float64(m.Total),
		"drover_gpus_allocated" + model:          float64(m.Allocated),
		"drover_gpus_free" + model:               float64(m.Free),
		"drover_gpus_unhealthy" + model:          0,
		"drover_gpu_allocation_ratio{}":          6.0 / 8,
		"drover_nodes{status=ready}":             2,
		"drover_evals_blocked{}":                 1,
		"drover_allocations_pending{reason=gpu}": 1, // 16 GPUs on nodes of 8
		"drover_broker_ready{scheduler=service}": 0,
	}
	if m.Total != 8 || m.Allocated != 6 {
		t.Fatalf("GPU summary = %+v, want 6 of 8 allocated", m)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}

	rec := httptest.NewRecorder()
	tm.PrometheusHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, name := range []string{`drover_scheduler_process{type="service",quantile="0.5"}`, "drover_plan_submit{quantile", "drover_raft_"} {
		if !strings.Contains(string(body), name) {
			t.Errorf("scrape has no %s", name)
		}
	}
}

// TestClusterMetricsFollowerSilent: a server that does not lead exports
// no cluster series (a scrape of every server counts GPUs once).
func TestClusterMetricsFollowerSilent(t *testing.T) {
	cfg := testConfig(t)
	cfg.BootstrapExpect = 3 // never leads alone
	s := startServer(t, cfg)
	if got := gatherGauges(t, s.MetricsCollector()); len(got) != 0 {
		t.Fatalf("a server that does not lead exported %v", got)
	}
}

// BenchmarkClusterMetricsScrape gathers the leader's cluster series over
// 5,000 nodes with 8 GPUs each, half of the GPUs held by 10,000
// allocations, written straight into the state store.
func BenchmarkClusterMetricsScrape(b *testing.B) {
	cfg := &Config{
		NodeName: "bench", DataDir: b.TempDir(), BootstrapExpect: 1, NumSchedulers: 1,
		RPCAddr:  &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)},
		SerfAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)},
		Logger:   hclog.NewNullLogger(),
	}
	s, err := NewServer(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown()
	for deadline := time.Now().Add(10 * time.Second); !s.leading(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("server never led")
		}
	}
	st := s.State()
	index := uint64(1_000_000)
	job := gpuJob("bench", structs.JobTypeService, 1, 4)
	for i := range 5000 {
		n := gpuNode(fmt.Sprintf("node-%04d", i), 8)
		n.Status = structs.NodeStatusReady
		index++
		if err := st.UpsertNode(index, n); err != nil {
			b.Fatal(err)
		}
		var allocs []*structs.Allocation
		ids := n.NodeResources.Devices[0].Instances
		for k := range 2 {
			allocs = append(allocs, &structs.Allocation{
				ID: structs.GenerateUUID(), Namespace: structs.DefaultNamespace, NodeID: n.ID, JobID: job.ID, Job: job, TaskGroup: "train",
				DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
				AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{"t": {
					Devices: []*structs.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "NVIDIA H100 80GB HBM3",
						DeviceIDs: []string{ids[4*k].ID, ids[4*k+1].ID}}},
				}}},
			})
		}
		index++
		if err := st.UpsertAllocs(index, allocs); err != nil {
			b.Fatal(err)
		}
	}
	got := gatherGauges(b, s.MetricsCollector())
	if a := got["drover_gpus_allocated{model=NVIDIA H100 80GB HBM3}"]; a != 20000 {
		b.Fatalf("drover_gpus_allocated = %v, want 20000", a)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.MetricsCollector())
	b.ResetTimer()
	for range b.N {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHeartbeatMissedCounted: a node's TTL running out counts in
// drover_heartbeat_missed.
func TestHeartbeatMissedCounted(t *testing.T) {
	tm, err := telemetry.New(telemetry.Config{PrometheusMetrics: true, DisableHostname: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Shutdown()
	h := newHeartbeats()
	h.setEnabled(true)
	defer h.setEnabled(false)
	h.reset("node-1", time.Millisecond)
	h.reset("node-2", time.Millisecond)
	waitFor(t, 5*time.Second, func() (bool, string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.expired) == 2, "the two TTLs never expired"
	})
	rec := httptest.NewRecorder()
	tm.PrometheusHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if body := rec.Body.String(); !strings.Contains(body, "\ndrover_heartbeat_missed 2\n") {
		t.Fatalf("scrape has no drover_heartbeat_missed 2:\n%s", body)
	}
}
