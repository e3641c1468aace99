package allocrunner

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestTaskEnvPorts(t *testing.T) {
	alloc := envAlloc()
	alloc.AllocatedResources.Shared.Ports = []structs.AllocatedPortMapping{
		{Label: "http", Value: 23456, To: 8080, HostIP: "10.0.0.7"},
		{Label: "metrics", Value: 9100, HostIP: "10.0.0.7"},
		{Label: "v6", Value: 20001, HostIP: "fd00::1"},
	}
	task := &structs.Task{Name: "main", Env: map[string]string{"LISTEN": "0.0.0.0:${NOMAD_PORT_http}"}}
	env := TaskEnv(alloc, task, "/d/alloc/a1", "/d/alloc/a1/main")
	want := map[string]string{
		"LISTEN":                    "0.0.0.0:8080",
		"NOMAD_PORT_http":           "8080",
		"NOMAD_ALLOC_PORT_http":     "8080",
		"NOMAD_HOST_PORT_http":      "23456",
		"NOMAD_IP_http":             "10.0.0.7",
		"NOMAD_HOST_IP_http":        "10.0.0.7",
		"NOMAD_ADDR_http":           "10.0.0.7:23456",
		"NOMAD_HOST_ADDR_http":      "10.0.0.7:23456",
		"DROVER_PORT_http":          "8080",
		"DROVER_HOST_PORT_http":     "23456",
		"DROVER_ADDR_http":          "10.0.0.7:23456",
		"DROVER_ALLOC_PORT_http":    "8080",
		"DROVER_HOST_ADDR_http":     "10.0.0.7:23456",
		"DROVER_IP_http":            "10.0.0.7",
		"DROVER_HOST_IP_http":       "10.0.0.7",
		"NOMAD_PORT_metrics":        "9100",
		"NOMAD_HOST_PORT_metrics":   "9100",
		"NOMAD_ADDR_metrics":        "10.0.0.7:9100",
		"NOMAD_ADDR_v6":             "[fd00::1]:20001",
		"DROVER_ALLOC_PORT_metrics": "9100",
	}
	for k, w := range want {
		if got, ok := env[k]; !ok || got != w {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, w)
		}
	}
	if _, ok := TaskEnv(envAlloc(), task, "/d", "/d/main")["NOMAD_PORT_http"]; ok {
		t.Errorf("NOMAD_PORT_http set for an allocation without ports")
	}
}
