package api

import (
	"context"
	"net/http"
	"testing"
)

// TestDecodeDropsNulls: null list elements are dropped and null map
// values become empty objects, so that structs helpers such as
// Allocation.DeviceIDs and Node.GPUCount do not panic on them.
func TestDecodeDropsNulls(t *testing.T) {
	f, c := newFakeAgent(t)
	f.handle("GET /v1/allocation/a1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "3")
		w.Write([]byte(`{"ID": "a1",
			"AllocatedResources": {"Tasks": {"t": null, "u": {"Devices": [null, {"DeviceIDs": ["GPU-1"]}]}}},
			"TaskStates": {"t": null, "u": {"Events": [null]}},
			"Job": {"ID": "j", "TaskGroups": [null, {"Name": "g", "Tasks": [null], "Meta": {"k": "v"}}]},
			"Metrics": null}`))
	})
	f.handle("GET /v1/node/n1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "3")
		w.Write([]byte(`{"ID": "n1", "Drivers": {"raw_exec": null},
			"NodeResources": {"Devices": [null, {"Type": "gpu", "Instances": [null, {"ID": "GPU-1", "Healthy": true}]}]}}`))
	})
	ctx := context.Background()
	a, _, err := c.Allocations().Info(ctx, "a1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.DeviceIDs(); len(got) != 1 || got[0] != "GPU-1" {
		t.Errorf("DeviceIDs = %v, want [GPU-1]", got)
	}
	if a.TaskStates["t"] == nil || len(a.TaskStates["u"].Events) != 0 {
		t.Errorf("TaskStates = %+v, want t empty and u without events", a.TaskStates)
	}
	if len(a.Job.TaskGroups) != 1 || len(a.Job.TaskGroups[0].Tasks) != 0 || a.Job.TaskGroups[0].Meta["k"] != "v" {
		t.Errorf("Job.TaskGroups = %+v, want one group without tasks, meta kept", a.Job.TaskGroups)
	}
	if a.Metrics != nil {
		t.Errorf("Metrics = %+v, want nil: absent pointers stay absent", a.Metrics)
	}
	n, _, err := c.Nodes().Info(ctx, "n1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if total, healthy := n.GPUCount(); total != 1 || healthy != 1 {
		t.Errorf("GPUCount = %d, %d; want 1, 1", total, healthy)
	}
	if d := n.Drivers["raw_exec"]; d == nil || d.Detected {
		t.Errorf("Drivers[raw_exec] = %+v, want an empty, undetected driver", d)
	}
}
