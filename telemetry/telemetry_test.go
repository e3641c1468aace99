package telemetry

import (
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metrics "github.com/hashicorp/go-metrics"
	compat "github.com/hashicorp/go-metrics/compat"
)

func scrape(t *testing.T, tm *Telemetry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	tm.PrometheusHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/metrics?format=prometheus", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape = %d %s", rec.Code, rec.Body)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// TestRaftPathLandsInSinks checks that what raft and serf emit (through
// go-metrics' compat package, armon's global without a build tag) and
// what Drover emits reach the same sinks, prefixed and without the host
// name when disable_hostname is set.
func TestRaftPathLandsInSinks(t *testing.T) {
	tm, err := New(Config{PrometheusMetrics: true, DisableHostname: true, HostName: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Shutdown()
	compat.IncrCounter([]string{"raft", "apply"}, 3)
	compat.SetGauge([]string{"raft", "leader", "lastContact"}, 7)
	metrics.IncrCounterWithLabels([]string{"heartbeat", "missed"}, 1, []metrics.Label{{Name: "x", Value: "y"}})
	out := scrape(t, tm)
	for _, want := range []string{"drover_raft_apply 3", "drover_raft_leader_lastContact 7", `drover_heartbeat_missed{x="y"} 1`} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape has no %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "h1") {
		t.Errorf("scrape names the host although disable_hostname is set:\n%s", out)
	}
}

// TestHostnamePrefix: without disable_hostname, go-metrics puts the host
// name into gauge names, as Nomad does.
func TestHostnamePrefix(t *testing.T) {
	tm, err := New(Config{PrometheusMetrics: true, HostName: "node7"})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Shutdown()
	metrics.SetGauge([]string{"thing"}, 2)
	if out := scrape(t, tm); !strings.Contains(out, "drover_node7_thing 2") {
		t.Fatalf("scrape has no drover_node7_thing 2:\n%s", out)
	}
}

// TestGPUCollector checks dcgm-exporter's names and labels, exactly, in
// both formats, and that a GPU's allocation labels go with the
// allocation (no stale series).
func TestGPUCollector(t *testing.T) {
	tm, err := New(Config{PrometheusMetrics: true, HostName: "node7"})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Shutdown()
	var mu sync.Mutex
	gpus := []GPU{{
		Index: 1, UUID: "GPU-1", Device: "nvidia1", ModelName: "NVIDIA H100", Hostname: "n1", NodeID: "node-1",
		Namespace: "default", Job: "train", TaskGroup: "g", AllocID: "a1", Task: "t", Simulated: true,
		UtilPercent: 85, FBUsedMiB: 1024, ECCDBEVolatile: 2,
	}}
	if err := tm.Register(NewGPUCollector(func() []GPU { mu.Lock(); defer mu.Unlock(); return append([]GPU(nil), gpus...) })); err != nil {
		t.Fatal(err)
	}
	out := scrape(t, tm)
	// client_golang writes unset labels as "", which Prometheus takes as
	// absent: PromQL sees dcgm-exporter's label set.
	const series = `{Hostname="n1",UUID="GPU-1",alloc_id="a1",device="nvidia1",gpu="1",job="train",modelName="NVIDIA H100",namespace="default",node_id="node-1",pci_bus_id="",sharing="",simulated="true",task="t",task_group="g"}`
	for _, want := range []string{
		"DCGM_FI_DEV_GPU_UTIL" + series + " 85\n",
		"DCGM_FI_DEV_FB_USED" + series + " 1024\n",
		"# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter",
		"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" + series + " 2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape has no %q:\n%s", want, out)
		}
	}
	for _, name := range DCGMNames() {
		if !strings.Contains(out, "\n"+name+"{") {
			t.Errorf("scrape has no series %s", name)
		}
	}
	sum, err := tm.Summary()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range sum.Gauges {
		if g.Name == "DCGM_FI_DEV_GPU_UTIL" && g.Value == 85 && g.DisplayLabels["alloc_id"] == "a1" && g.DisplayLabels["UUID"] == "GPU-1" {
			found = true
		}
	}
	if !found {
		t.Errorf("JSON summary has no DCGM_FI_DEV_GPU_UTIL of GPU-1: %+v", sum.Gauges)
	}

	mu.Lock()
	gpus[0].AllocID, gpus[0].Job, gpus[0].Namespace, gpus[0].TaskGroup, gpus[0].Task = "", "", "", "", ""
	mu.Unlock()
	out = scrape(t, tm)
	if strings.Contains(out, `alloc_id="a1"`) || !strings.Contains(out, `DCGM_FI_DEV_GPU_UTIL{Hostname="n1",UUID="GPU-1",alloc_id="",device="nvidia1",gpu="1",job=""`) {
		t.Fatalf("after the allocation ended, the scrape should show GPU-1 without its labels:\n%s", out)
	}
}

// TestPrometheusOff: without prometheus_metrics the JSON still works.
func TestPrometheusOff(t *testing.T) {
	tm, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Shutdown()
	if tm.PrometheusEnabled() {
		t.Fatal("PrometheusEnabled() = true without prometheus_metrics")
	}
	metrics.IncrCounter([]string{"jobs"}, 1)
	sum, err := tm.Summary()
	if err != nil || sum.Gauges == nil || sum.Samples == nil || sum.Points == nil {
		t.Fatalf("Summary() = %+v, %v; want empty lists, not nil", sum, err)
	}
	if len(sum.Counters) != 1 || sum.Counters[0].Name != "drover.jobs" || sum.Counters[0].Sum != 1 {
		t.Fatalf("Summary().Counters = %+v, want drover.jobs at 1", sum.Counters)
	}
}
