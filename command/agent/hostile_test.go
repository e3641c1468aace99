package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// hostileSeedJob is the valid job the JSON mutations start from. Its
// datacenter has no clients, and the agent under test has none either.
const hostileSeedJob = `{"Job": {"ID": "fuzz", "Name": "fuzz", "Type": "batch", "Datacenters": ["dc1"], "Priority": 50,
  "Constraints": [{"LTarget": "${attr.kernel.name}", "RTarget": "linux", "Operand": "="}],
  "Affinities": [{"LTarget": "${node.class}", "RTarget": "a", "Operand": "=", "Weight": 50}],
  "Spreads": [{"Attribute": "${node.datacenter}", "Weight": 50, "SpreadTarget": [{"Value": "dc1", "Percent": 100}]}],
  "Meta": {"k": "v"},
  "TaskGroups": [{"Name": "g", "Count": 2,
    "Constraints": [{"LTarget": "${meta.x}", "RTarget": "y", "Operand": "="}],
    "Affinities": [{"LTarget": "${meta.x}", "RTarget": "y", "Operand": "=", "Weight": 10}],
    "Spreads": [{"Attribute": "${meta.rack}", "Weight": 10}],
    "RestartPolicy": {"Attempts": 1, "Interval": 60000000000, "Delay": 1000000000, "Mode": "fail"},
    "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true", "args": ["a", {"b": [1, 2]}]},
      "Env": {"A": "b"},
      "Constraints": [{"LTarget": "${attr.os}", "RTarget": "x", "Operand": "!="}],
      "Resources": {"CPU": 100, "MemoryMB": 64, "Devices": [{"Name": "nvidia/gpu", "Count": 1,
        "Constraints": [{"LTarget": "${device.model}", "RTarget": "H100", "Operand": "="}],
        "Affinities": [{"LTarget": "${device.model}", "RTarget": "H100", "Operand": "=", "Weight": 10}]}]}}]}]}}`

// hostileSeedHCL is the valid job file the HCL mutations start from.
const hostileSeedHCL = `job "fuzz" {
  type        = "batch"
  datacenters = ["dc1"]
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  group "g" {
    count = 2
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
        args    = ["a", "${NOMAD_TASK_NAME}"]
      }
      resources {
        cpu    = 100
        memory = 64
        device "nvidia/gpu" {
          count = 1
        }
      }
    }
  }
}
`

// mutateJSON returns the seed job's JSON with one to three random
// mutations: a value replaced by null, a huge or negative number, deep
// nesting, a long string or a value of the wrong type, or a null
// appended to a list; then, at times, the bytes truncated or a byte
// replaced.
func mutateJSON(rng *rand.Rand, seed any) []byte {
	doc := cloneJSON(seed)
	for range 1 + rng.IntN(3) {
		doc = mutateValue(rng, doc)
	}
	out, _ := json.Marshal(doc)
	switch rng.IntN(10) {
	case 0:
		out = out[:rng.IntN(len(out)+1)]
	case 1:
		const junk = "{}[],:\"0-e\x00\xff"
		out[rng.IntN(len(out))] = junk[rng.IntN(len(junk))]
	}
	return out
}

var hostileValues = []func(rng *rand.Rand) any{
	func(*rand.Rand) any { return nil },
	func(*rand.Rand) any { return json.Number("1000000000") },
	func(*rand.Rand) any { return json.Number("9223372036854775808") },
	func(*rand.Rand) any { return json.Number("18446744073709551615") },
	func(*rand.Rand) any { return json.Number("-1") },
	func(*rand.Rand) any { return json.Number("0") },
	func(*rand.Rand) any { return json.Number("1e308") },
	func(*rand.Rand) any { return json.Number("-9223372036854775808") },
	func(*rand.Rand) any { return "" },
	func(rng *rand.Rand) any { return strings.Repeat("x", 100+rng.IntN(300)) },
	func(*rand.Rand) any { return true },
	func(*rand.Rand) any { return []any{} },
	func(*rand.Rand) any { return map[string]any{} },
	func(*rand.Rand) any { return []any{nil} },
	func(rng *rand.Rand) any {
		var v any = "deep"
		for range 10 + rng.IntN(1200) {
			if rng.IntN(2) == 0 {
				v = []any{v}
			} else {
				v = map[string]any{"k": v}
			}
		}
		return v
	},
}

// mutateValue replaces one value somewhere in v (or v itself), or
// appends a null to a list.
func mutateValue(rng *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 && rng.IntN(4) != 0 {
			keys := sortedKeys(x)
			k := keys[rng.IntN(len(keys))]
			x[k] = mutateValue(rng, x[k])
			return x
		}
	case []any:
		if rng.IntN(5) == 0 {
			return append(x, nil)
		}
		if len(x) > 0 && rng.IntN(4) != 0 {
			i := rng.IntN(len(x))
			x[i] = mutateValue(rng, x[i])
			return x
		}
	}
	return hostileValues[rng.IntN(len(hostileValues))](rng)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ { // insertion sort: a handful of keys
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = cloneJSON(e)
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = cloneJSON(e)
		}
		return c
	}
	return v
}

// hostileHCL returns a job file: the seed with a value swapped for a
// hostile one, deep nesting of lists, objects, blocks, parentheses or
// templates, a truncation or a replaced byte. Every 500th is a
// 100,000-deep list.
func hostileHCL(rng *rand.Rand, i int) string {
	if i%500 == 0 {
		return strings.Replace(hostileSeedHCL, `"/bin/true"`, strings.Repeat("[", 100000)+strings.Repeat("]", 100000), 1)
	}
	n := 10 + rng.IntN(3000)
	values := []string{
		"1e9", "1000000000", "9223372036854775808", "-1", "0", "1e400", "null", `"x"`, "true", "[]", "{}",
		strings.Repeat("[", n) + strings.Repeat("]", n),
		strings.Repeat("{a=", n) + "1" + strings.Repeat("}", n),
		strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		`"` + strings.Repeat("${", n) + "x" + strings.Repeat("}", n) + `"`,
		strings.Repeat("[", n),
		`"` + strings.Repeat("%{ if true }", n) + `"`,
		"<<EOF\n",
	}
	targets := []string{`"/bin/true"`, "= 2", "= 1\n", "= 100", "= 64", `"dc1"`, `"fuzz"`, `"batch"`, `"linux"`}
	src := strings.Replace(hostileSeedHCL, targets[rng.IntN(len(targets))], "= "+values[rng.IntN(len(values))], 1)
	switch rng.IntN(6) {
	case 0:
		src = src[:rng.IntN(len(src)+1)]
	case 1:
		b := []byte(src)
		const junk = "{}[]()\"=$%\n\x00\xff"
		b[rng.IntN(len(b))] = junk[rng.IntN(len(junk))]
		src = string(b)
	case 2:
		depth := 10 + rng.IntN(5000)
		src = strings.Replace(src, "config {", strings.Repeat("config {\n", depth)+strings.Repeat("}\n", depth-1), 1)
	}
	return src
}

// TestHostileInputs sends mutated job bodies to PUT /v1/jobs and hostile
// job files to POST /v1/jobs/parse on a live agent: no answer is a 5xx,
// nothing panics, and the agent still answers and lists its jobs.
func TestHostileInputs(t *testing.T) {
	// The full run takes about 8 s on 2 cores; under -race it would take
	// 90, so the race build sends half the job bodies.
	jsonBodies, hclFiles := 20000, 2000
	switch {
	case testing.Short():
		jsonBodies, hclFiles = 2000, 200
	case raceDetector:
		jsonBodies = 10000
	}
	_, base, logs := newServerOnlyAgent(t)
	var seed any
	dec := json.NewDecoder(strings.NewReader(hostileSeedJob))
	dec.UseNumber()
	if err := dec.Decode(&seed); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	var counts [6]atomic.Int64 // by status class: 0 transport error, 1xx..5xx
	var firstBad sync.Once
	send := func(path string, body []byte) {
		req, err := http.NewRequest(http.MethodPut, base+path, strings.NewReader(string(body)))
		if err != nil {
			t.Error(err)
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			counts[0].Add(1)
			firstBad.Do(func() { t.Errorf("%s: %v", path, err) })
			return
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		counts[resp.StatusCode/100].Add(1)
		if resp.StatusCode >= 500 {
			firstBad.Do(func() { t.Errorf("%s: %d %.300q for body %.300q", path, resp.StatusCode, msg, body) })
		}
	}
	const workers = 3
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(15, uint64(w)))
			for i := w; i < jsonBodies; i += workers {
				send("/v1/jobs", mutateJSON(rng, seed))
			}
			for i := w; i < hclFiles; i += workers {
				body, _ := json.Marshal(map[string]string{"JobHCL": hostileHCL(rng, i)})
				send("/v1/jobs/parse", body)
			}
		})
	}
	wg.Wait()
	t.Logf("sent %d job bodies and %d job files: %d 2xx, %d 4xx, %d 5xx, %d transport errors",
		jsonBodies, hclFiles, counts[2].Load(), counts[4].Load(), counts[5].Load(), counts[0].Load())
	if n := counts[5].Load() + counts[0].Load(); n > 0 {
		t.Errorf("%d answers were 5xx or transport errors, want 0", n)
	}
	if strings.Contains(logs.String(), "panic") {
		t.Errorf("agent log has a panic:\n%.3000s", logs.String())
	}
	code, list := get(t, base+"/v1/jobs")
	var jobs []map[string]any
	if err := json.Unmarshal([]byte(list), &jobs); code != http.StatusOK || err != nil {
		t.Fatalf("GET /v1/jobs = %d %.300q (%v), want the job list", code, list, err)
	}
	for _, j := range jobs {
		id, _ := j["ID"].(string)
		ns, _ := j["Namespace"].(string)
		if code, msg := get(t, fmt.Sprintf("%s/v1/job/%s?namespace=%s", base, urlPathEscape(id), ns)); code != http.StatusOK {
			t.Errorf("GET job %q listed in %q = %d %.200q, want 200", id, ns, code, msg)
		}
	}
	t.Logf("agent alive; %d jobs stored, each readable", len(jobs))
}

func urlPathEscape(s string) string {
	return strings.NewReplacer("%", "%25", "/", "%2F", "?", "%3F", "#", "%23", " ", "%20").Replace(s)
}
