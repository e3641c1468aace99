package server

import (
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
	"github.com/droverhq/drover/telemetry"
)

// BenchmarkWorkerMetrics is what metrics add to one evaluation a worker
// schedules (one process timing and one plan timing) with the agent's
// sinks, the Prometheus one included. Compare its ns/op with
// BenchmarkProcess's (server/scheduler) from the same run for the
// overhead on the scheduler.
func BenchmarkWorkerMetrics(b *testing.B) {
	tel, err := telemetry.New(telemetry.Config{PrometheusMetrics: true, DisableHostname: true})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown()
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		measurePlanSubmit(start)
		measureProcess(structs.JobTypeBatch, start)
	}
}
