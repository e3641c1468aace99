package agent

import (
	"fmt"
	"strings"
	"testing"

	nomad "github.com/hashicorp/nomad/api"
)

// TestScalingPolicies_NomadClient: Nomad's Go client registers a job
// with a group scaling block, reads its policy through the scaling
// endpoints, and a scale outside the bounds is a 400 naming them.
func TestScalingPolicies_NomadClient(t *testing.T) {
	_, base := newTestAgent(t)
	c, err := nomad.NewClient(&nomad.Config{Address: base})
	if err != nil {
		t.Fatal(err)
	}
	job := nomad.NewServiceJob("web", "web", "global", 50)
	job.Datacenters = []string{"dc1"}
	tg := nomad.NewTaskGroup("g", 2)
	tg.Scaling = &nomad.ScalingPolicy{Min: new(int64(1)), Max: new(int64(4)),
		Policy: map[string]any{"cooldown": "1m", "check": []any{map[string]any{"cpu": map[string]any{
			"source": "nomad-apm", "strategy": []any{map[string]any{"target-value": map[string]any{"target": 70}}}}}}}}
	task := nomad.NewTask("t", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"60"})
	job.AddTaskGroup(tg.AddTask(task))
	job.UI = &nomad.JobUIConfig{Description: "demo", Links: []*nomad.JobUILink{{Label: "Docs", URL: "https://example.com"}}}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("register: %v", err)
	}

	stubs, _, err := c.Scaling().ListPolicies(&nomad.QueryOptions{Params: map[string]string{"job": "web"}})
	if err != nil || len(stubs) != 1 || stubs[0].Target["Group"] != "g" || !stubs[0].Enabled {
		t.Fatalf("ListPolicies: %+v, %v", stubs, err)
	}
	p, _, err := c.Scaling().GetPolicy(stubs[0].ID, nil)
	if err != nil || *p.Min != 1 || *p.Max != 4 || p.Type != "horizontal" || p.Policy["cooldown"] != "1m" ||
		!strings.Contains(fmt.Sprint(p.Policy["check"]), "target-value:map[target:70]") {
		t.Fatalf("GetPolicy: %+v, %v", p, err)
	}
	if _, _, err := c.Scaling().GetPolicy("no-such-policy", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown policy: %v, want a 404", err)
	}

	_, _, err = c.Jobs().Scale("web", "g", new(5), "too many", false, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "[1, 4]") {
		t.Errorf("scale to 5: %v, want a 400 naming the bounds [1, 4]", err)
	}
	if _, _, err := c.Jobs().Scale("web", "g", new(4), "max", false, nil, nil); err != nil {
		t.Errorf("scale to 4: %v", err)
	}
	got, _, err := c.Jobs().Info("web", nil)
	if err != nil || *got.TaskGroups[0].Count != 4 || got.UI == nil || got.UI.Links[0].URL != "https://example.com" {
		t.Errorf("job after scale: %+v, %v", got, err)
	}
}
