package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// dashboardQuery is one PromQL query of the Grafana dashboard.
type dashboardQuery struct {
	where, expr string
	// mayBeEmpty: a query that finds nothing on a healthy cluster (XID
	// and ECC errors, filtered by "> 0").
	mayBeEmpty bool
}

// labelValuesQuery is Grafana's label_values(selector, label).
var labelValuesQuery = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// dashboardQueries reads scripts/grafana/drover.json and returns its
// panels' queries and its variables' (label_values(m, l) as
// group by (l) (m)), with Grafana's variables replaced as Grafana would
// with "All" selected.
func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	src, err := os.ReadFile("../scripts/grafana/drover.json")
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Type, Title string
		Targets     []struct{ Expr string }
		Panels      []json.RawMessage
	}
	var d struct {
		Panels     []panel
		Templating struct {
			List []struct {
				Name, Type string
				Query      json.RawMessage // a string, or {"query": ...}
			}
		}
	}
	if err := json.Unmarshal(src, &d); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	vars := strings.NewReplacer("$__rate_interval", "1m", "$model", ".*", "$job", ".*", "$node", ".*")
	var out []dashboardQuery
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		_ = json.Unmarshal(v.Query, &q)
		m := labelValuesQuery.FindStringSubmatch(q.Query)
		if m == nil {
			t.Fatalf("variable %s: query %s is not label_values(metric, label)", v.Name, v.Query)
		}
		out = append(out, dashboardQuery{where: "variable " + v.Name, expr: fmt.Sprintf("group by (%s) (%s)", m[2], m[1])})
	}
	for _, p := range d.Panels {
		for i, tg := range p.Targets {
			out = append(out, dashboardQuery{
				where:      fmt.Sprintf("panel %q target %d", p.Title, i),
				expr:       vars.Replace(tg.Expr),
				mayBeEmpty: strings.HasSuffix(tg.Expr, "> 0"),
			})
		}
	}
	return out
}

// promEval answers an instant query's series count, or Prometheus' error.
func promEval(base, q string) (int, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		Status, Error string
		Data          struct{ Result []json.RawMessage }
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return 0, fmt.Errorf("%d %s", resp.StatusCode, body)
	}
	if out.Status != "success" {
		return 0, fmt.Errorf("%s", out.Error)
	}
	return len(out.Data.Result), nil
}

// TestE2E_GrafanaDashboard: Debian's Prometheus scrapes an agent with
// simulated GPUs, a running GPU job and a quota with the README's
// config; every query of the Grafana dashboard (its variables as Grafana
// sends them with All selected) is evaluated without error and, but for
// the error panels of a healthy cluster, finds series.
func TestE2E_GrafanaDashboard(t *testing.T) {
	bin := prometheusBin(t)
	queries := dashboardQueries(t)
	dir := reachableDir(t)
	ports := freePorts(t, 4)
	cfg := agentConfig(t, dir, "grafana", ports, 2)
	appendFile(t, cfg, telemetryBlock)
	a := launchAgent(t, ports[0], "-config", cfg)
	a.waitReady()
	// A quota with a namespace naming it, for the quota usage panel.
	for _, w := range [][3]string{
		{http.MethodPut, "/v1/quota/e2e-gpus", `{"Limits": [{"Region": "global", "RegionLimit": {"GPUs": 4}}]}`},
		{http.MethodPost, "/v1/namespace/e2e", `{"Quota": "e2e-gpus"}`},
	} {
		if code, body := a.do(w[0], w[1], w[2]); code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", w[0], w[1], code, body)
		}
	}
	if r := a.drover("job", "run", "-detach", writeFile(t, dir, "train.hcl", promJob("train", 1, 1))); r.code != 0 {
		t.Fatalf("job run: %d %s", r.code, r.stderr)
	}
	a.waitAlloc("train", "running")
	target := []string{fmt.Sprintf("%q", strings.TrimPrefix(a.addr, "http://"))}
	prom := startPrometheus(t, bin, dir, ports[3], readmeScrapeConfig(t, target, ""))

	// go-metrics drops a summary a minute after its last sample
	// (telemetry's promExpiration): while waiting, a small job now and
	// then keeps the scheduler's and plan applier's timings alive.
	nudged := time.Now()
	var failing []string
	for deadline, i := time.Now().Add(60*time.Second), 0; ; time.Sleep(time.Second) {
		if time.Since(nudged) > 20*time.Second {
			i++
			job := fmt.Sprintf(`{"Job": {"ID": "nudge-%d", "Type": "batch", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Count": 1,
			  "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}, "Resources": {"CPU": 100, "MemoryMB": 32}}]}]}}`, i)
			if code, body := a.do(http.MethodPut, "/v1/jobs", job); code != http.StatusOK {
				t.Fatalf("register nudge-%d: %d %s", i, code, body)
			}
			nudged = time.Now()
		}
		failing = failing[:0]
		for _, q := range queries {
			n, err := promEval(prom, q.expr)
			switch {
			case err != nil:
				failing = append(failing, fmt.Sprintf("%s: %s: %v", q.where, q.expr, err))
			case n == 0 && !q.mayBeEmpty:
				failing = append(failing, fmt.Sprintf("%s: %s: no series", q.where, q.expr))
			}
		}
		if len(failing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			slices.Sort(failing)
			t.Fatalf("after 60s, %d of the dashboard's %d queries fail:\n%s", len(failing), len(queries), strings.Join(failing, "\n"))
		}
	}
}
