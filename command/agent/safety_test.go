package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers/drivertest"
)

// TestRawExecOffOutsideDev: an agent started from a config without
// plugin "raw_exec" reports the driver as not detected, saying how to
// enable it, and the scheduler places no raw_exec task on it.
func TestRawExecOffOutsideDev(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Ports = &PortsConfig{}
	cfg.DataDir = drivertest.ReachableTempDir(t)
	cfg.LogLevel = "WARN"
	cfg.DevGPUs = 1
	cfg.Server.Enabled, cfg.Server.BootstrapExpect = true, 1
	cfg.Client.Enabled = true
	a, err := NewAgent(cfg, io.Discard)
	if err != nil {
		t.Fatalf("start agent: %v", err)
	}
	t.Cleanup(func() { _ = a.Shutdown() })
	base := "http://" + a.HTTPAddr()
	if !strings.HasPrefix(a.HTTPAddr(), "127.0.0.1:") {
		t.Errorf("agent listens on %s, want loopback by default", a.HTTPAddr())
	}

	var node struct {
		Drivers map[string]struct {
			Detected, Healthy bool
			HealthDescription string
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if getJSON(t, base+"/v1/node/"+a.LocalNodeID(), &node) == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node not registered after 15s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	re := node.Drivers["raw_exec"]
	if re.Detected || re.Healthy || !strings.Contains(re.HealthDescription, `enabled = true in the config block of the agent config's plugin "raw_exec" block`) {
		t.Errorf("raw_exec driver = %+v, want not detected, saying how to enable it", re)
	}

	req, _ := http.NewRequest("PUT", base+"/v1/job/raw/plan", strings.NewReader(
		`{"Job": {"ID": "raw", "Type": "batch", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Count": 1,
		  "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]}}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var plan map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&plan); err != nil || resp.StatusCode != 200 {
		t.Fatalf("plan: status %d, %v", resp.StatusCode, err)
	}
	failed, _ := plan["FailedTGAllocs"].(map[string]any)
	if p, _ := plan["Placements"].([]any); len(p) != 0 || !strings.Contains(fmt.Sprint(failed["g"]), "raw_exec") {
		t.Errorf("plan: placements %v, failures %v; want none placed, for want of raw_exec", plan["Placements"], failed)
	}
}
