package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// dashboardFile is the Grafana dashboard shipped in scripts/grafana.
const dashboardFile = "../../scripts/grafana/drover.json"

// promqlNonMetrics are PromQL's words that are not metric names:
// aggregation operators (which may precede by/without before their
// parenthesis), modifiers, set operators and literals. Functions are told
// by the parenthesis that follows them.
var promqlNonMetrics = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "atan2": true,
	"inf": true, "nan": true,
}

// labelListWords are followed by a parenthesised list of label names.
var labelListWords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// promqlMetricNames returns the metric names a PromQL expression selects:
// identifiers that stand as selectors (bare or before {), leaving out
// functions (an identifier before "("), operators and keywords, label
// names inside {} and after by/without/on/ignoring/group_left/right,
// string literals, and durations and numbers. Grafana's label_values(m,
// label) counts m only.
func promqlMetricNames(expr string) ([]string, error) {
	var names []string
	skipLabelList := false
	depth := 0 // of parentheses not skipped whole
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ')' || c == '}' || c == ']':
			if depth--; c != ')' || depth < 0 {
				return nil, fmt.Errorf("%q: unbalanced %c at %d", expr, c, i)
			}
			i++
		case c == '(' && !skipLabelList:
			depth++
			i++
		case c == '"' || c == '\'' || c == '`':
			end := strings.IndexByte(expr[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("%q: unterminated string at %d", expr, i)
			}
			i += end + 2
		case c == '{' || c == '[':
			end, err := closing(expr, i)
			if err != nil {
				return nil, err
			}
			i = end + 1
		case c == '(' && skipLabelList:
			end, err := closing(expr, i)
			if err != nil {
				return nil, err
			}
			skipLabelList = false
			i = end + 1
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdentChar(expr[j]) {
				j++
			}
			word := expr[i:j]
			rest := strings.TrimLeft(expr[j:], " \t\n")
			switch {
			case labelListWords[word]:
				skipLabelList = strings.HasPrefix(rest, "(")
			case promqlNonMetrics[word]:
			case word == "label_values" && strings.HasPrefix(rest, "("):
				// label_values(metric, label): skip the label.
				open := len(expr) - len(rest)
				end, err := closing(expr, open)
				if err != nil {
					return nil, err
				}
				arg, _, _ := strings.Cut(expr[open+1:end], ",")
				inner, err := promqlMetricNames(arg)
				if err != nil {
					return nil, err
				}
				names = append(names, inner...)
				j = end + 1
			case strings.HasPrefix(rest, "("): // a function
			default:
				names = append(names, word)
			}
			i = j
		case c >= '0' && c <= '9' || c == '.':
			// A number or duration (5m, 1e3, 0.5): digits, letters, dots.
			for i < len(expr) && (isIdentChar(expr[i]) || expr[i] == '.') {
				i++
			}
		case c == '$':
			// A Grafana variable outside a string ($__rate_interval is
			// inside [], handled above).
			i++
			for i < len(expr) && (isIdentChar(expr[i]) || expr[i] == '{' || expr[i] == '}') {
				i++
			}
		default:
			i++
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("%q: %d parentheses not closed", expr, depth)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// closing returns the index of the bracket closing the one at open,
// skipping string literals.
func closing(expr string, open int) (int, error) {
	pairs := map[byte]byte{'(': ')', '{': '}', '[': ']'}
	var stack []byte
	for i := open; i < len(expr); i++ {
		switch c := expr[i]; c {
		case '(', '{', '[':
			stack = append(stack, pairs[c])
		case ')', '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return 0, fmt.Errorf("%q: unbalanced %c at %d", expr, c, i)
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return i, nil
			}
		case '"', '\'', '`':
			end := strings.IndexByte(expr[i+1:], c)
			if end < 0 {
				return 0, fmt.Errorf("%q: unterminated string at %d", expr, i)
			}
			i += end + 1
		}
	}
	return 0, fmt.Errorf("%q: %c at %d is not closed", expr, expr[open], open)
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

func TestPromQLMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`sum by (model) (drover_gpus_total{model=~"$model"})`, []string{"drover_gpus_total"}},
		{`sum(x{a="b,c{d}"}) by (job, le) / on (job) group_left (instance) y`, []string{"x", "y"}},
		{`rate(a_count[$__rate_interval]) / rate(a_sum[5m] offset 1h)`, []string{"a_count", "a_sum"}},
		{`max without (gpu) (DCGM_FI_DEV_FB_USED) * 1048576 > bool 0.5e3`, []string{"DCGM_FI_DEV_FB_USED"}},
		{`topk(3, histogram_quantile(0.9, m_bucket)) unless z`, []string{"m_bucket", "z"}},
		{`{__name__="hidden"} or count_values("v", c)`, []string{"c"}},
		{`label_values(drover_gpus_total{x="y"}, model)`, []string{"drover_gpus_total"}},
		{`label_values(Hostname)`, []string{"Hostname"}},
		{`sum by(job)(a) - sum without(job)(b)`, []string{"a", "b"}},
	}
	for _, tt := range tests {
		got, err := promqlMetricNames(tt.expr)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("promqlMetricNames(%q) = %v, %v; want %v", tt.expr, got, err, tt.want)
		}
	}
	for _, bad := range []string{`sum(x`, `x{a="b}`, `x[5m)`, `a)`, `rate(a[5m]))`} {
		if _, err := promqlMetricNames(bad); err == nil {
			t.Errorf("promqlMetricNames(%q): no error", bad)
		}
	}
}

// grafanaDashboard is the part of a dashboard the test reads.
type grafanaDashboard struct {
	UID        string
	Title      string
	Panels     []grafanaPanel
	Templating struct {
		List []struct {
			Name, Type string
			Query      json.RawMessage
			Datasource *grafanaDatasource
		}
	}
}

type grafanaDatasource struct{ Type, UID string }

type grafanaPanel struct {
	Type, Title string
	Datasource  *grafanaDatasource
	Targets     []struct{ Expr string }
	Panels      []grafanaPanel // a collapsed row's
}

// dashboardQueries reads the dashboard and returns every PromQL query it
// runs (panel targets and variable queries), each with where it is.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	src, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(src, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("%s: no uid or title", dashboardFile)
	}
	queries := map[string]string{}
	hasDatasourceVar := false
	for _, v := range d.Templating.List {
		if v.Type == "datasource" {
			hasDatasourceVar = v.Name == "datasource" && string(v.Query) == `"prometheus"`
			continue
		}
		var q struct{ Query string }
		if json.Unmarshal(v.Query, &q) != nil || q.Query == "" {
			_ = json.Unmarshal(v.Query, &q.Query)
		}
		if q.Query == "" || v.Datasource == nil || v.Datasource.UID != "${datasource}" {
			t.Errorf("variable %s: query %s, datasource %+v; want a query on ${datasource}", v.Name, v.Query, v.Datasource)
		}
		queries["variable "+v.Name] = q.Query
	}
	if !hasDatasourceVar {
		t.Errorf("%s: no datasource variable named datasource for Prometheus", dashboardFile)
	}
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
				t.Errorf("panel %q: datasource %+v, %d targets; want queries on ${datasource}", p.Title, p.Datasource, len(p.Targets))
			}
			for i, tg := range p.Targets {
				queries[fmt.Sprintf("panel %q target %d", p.Title, i)] = tg.Expr
			}
		}
	}
	walk(d.Panels)
	return queries
}

// scrapedNames returns the metric names of a Prometheus text answer.
func scrapedNames(body string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}

// TestDashboard (issue #16's must-hold 3): every metric name of every
// expression of the Grafana dashboard exists in a live scrape of a dev
// agent (simulated GPUs, a GPU job running and a quota, so per-GPU,
// per-allocation, scheduler, plan applier and quota series exist); with
// promtool installed, every expression is valid PromQL.
func TestDashboard(t *testing.T) {
	queries := dashboardQueries(t)
	want := map[string][]string{} // metric -> where
	for where, q := range queries {
		names, err := promqlMetricNames(q)
		if err != nil || len(names) == 0 {
			t.Errorf("%s: %q: metric names %v, %v", where, q, names, err)
		}
		for _, n := range names {
			want[n] = append(want[n], where)
		}
	}
	if len(queries) < 20 || len(want) < 15 {
		t.Fatalf("%d queries naming %d metrics: want the whole dashboard", len(queries), len(want))
	}
	checkPromtool(t, queries)

	_, base := newTestAgent(t)
	// A quota with a namespace naming it, so the quota series exist.
	for _, w := range [][3]string{
		{http.MethodPut, "/v1/quota/dash-gpus", `{"Limits": [{"Region": "global", "RegionLimit": {"GPUs": 4}}]}`},
		{http.MethodPost, "/v1/namespace/dash", `{"Quota": "dash-gpus"}`},
	} {
		if code, body := send(t, w[0], base+w[1], "", w[2]); code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", w[0], w[1], code, body)
		}
	}
	job := `{"Job": {"ID": "dash", "Type": "batch", "Datacenters": ["dc1"],
  "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [{"Name": "t", "Driver": "raw_exec",
    "Config": {"command": "/bin/sleep", "args": ["60"]},
    "Resources": {"CPU": 100, "MemoryMB": 64, "Devices": [{"Name": "nvidia/gpu", "Count": 1}]}}]}]}}`
	if code, body := send(t, http.MethodPut, base+"/v1/jobs", "", job); code != http.StatusOK {
		t.Fatalf("register: %d %s", code, body)
	}
	t.Cleanup(func() { send(t, http.MethodDelete, base+"/v1/job/dash?purge=true", "", "") })
	var missing []string
	var body string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, body = send(t, http.MethodGet, base+"/v1/metrics?format=prometheus", "", "")
		got := scrapedNames(body)
		missing = missing[:0]
		for n := range want {
			if !got[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 && strings.Contains(body, `job="dash"`) {
			break
		}
		if time.Now().After(deadline) {
			slices.Sort(missing)
			for _, n := range missing {
				t.Errorf("metric %s (used by %s) is not in the agent's scrape", n, strings.Join(want[n], "; "))
			}
			t.Fatalf("after 30s, %d of the dashboard's %d metrics are missing from the scrape (job dash's series present: %v)", len(missing), len(want), strings.Contains(body, `job="dash"`))
		}
	}
}

// grafanaVars are what Grafana substitutes before a query runs, with
// values a Prometheus would get.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$__interval", "15s", "$__range", "1h")

// checkPromtool checks every query's syntax with promtool, as recording
// rules: absent, the check is skipped outside CI and fails in CI.
func checkPromtool(t *testing.T, queries map[string]string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool is not installed (Debian's prometheus package has it): %v", err)
		}
		t.Logf("promtool is not installed: the expressions' syntax is not checked")
		return
	}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	var where []string
	for w, q := range queries {
		if strings.HasPrefix(q, "label_values(") {
			continue // Grafana's, not PromQL
		}
		where = append(where, w)
		b, _ := json.Marshal(grafanaVars.Replace(q)) // a JSON string is a YAML string
		fmt.Fprintf(&rules, "      - record: dashboard:q%d\n        expr: %s\n", len(where), b)
	}
	file := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "check", "rules", file).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("%d rules found", len(where))) {
		t.Errorf("promtool check rules: %v\n%s\nrules (in order: %v):\n%s", err, out, where, rules.String())
	}
}
