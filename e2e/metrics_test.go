package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// telemetryBlock is the README's telemetry block.
const telemetryBlock = `
telemetry {
  prometheus_metrics  = true
  collection_interval = "1s"
  disable_hostname    = true
}
`

// promJob is a batch job of count allocations, each holding gpus GPUs
// until killed.
func promJob(id string, count, gpus int) string {
	return fmt.Sprintf(`job %q {
  type        = "batch"
  datacenters = ["dc1"]
  group "g" {
    count = %d
    task "work" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      resources {
        cpu    = 100
        memory = 64
        device "nvidia/gpu" {
          count = %d
        }
      }
    }
  }
}
`, id, count, gpus)
}

// prometheusBin finds Debian's prometheus; absent, the test is skipped
// outside CI and fails in CI (.ci/run installs it).
func prometheusBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err == nil {
		return bin
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("prometheus is not installed (.ci/run installs Debian's prometheus package): %v", err)
	}
	t.Skipf("prometheus is not installed (apt-get install prometheus): %v", err)
	return ""
}

// startPrometheus runs a Prometheus server on port with scrapeConfigs,
// scraping every second, with its own config and data dir; it is
// stopped when the test ends.
func startPrometheus(t *testing.T, bin, dir string, port int, scrapeConfigs string) string {
	t.Helper()
	cfg := writeFile(t, dir, "prometheus.yml", "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"+scrapeConfigs)
	logs := &syncBuffer{}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port))
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// readmeScrapeConfig is the README's Prometheus scrape config (its
// honor_labels keeps the GPU series' job label, the Drover job, instead
// of renaming it exported_job) with the given targets, sending the token
// in tokenFile, or without the authorization block when tokenFile is ""
// (a cluster without ACLs).
func readmeScrapeConfig(t *testing.T, targets []string, tokenFile string) string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```yaml\nscrape_configs:")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 || !strings.Contains(block, "honor_labels: true") || !strings.Contains(block, "credentials_file:") {
		t.Fatal("README has no Prometheus scrape config with honor_labels and a credentials_file")
	}
	var out []string
	for _, line := range strings.Split("scrape_configs:"+block, "\n") {
		trimmed := strings.TrimSpace(line)
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		switch {
		case tokenFile == "" && (strings.HasPrefix(trimmed, "authorization:") || strings.HasPrefix(trimmed, "credentials_file:")):
			continue
		case strings.HasPrefix(trimmed, "credentials_file:"):
			line = indent + "credentials_file: " + tokenFile
		case strings.HasPrefix(trimmed, "- targets:"):
			line = indent + "- targets: [" + strings.Join(targets, ", ") + "]"
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// promSample is one series of an instant query's answer.
type promSample struct {
	Metric map[string]string
	Value  [2]any
}

// promQuery answers an instant PromQL query; nil on any error (the
// server may not be up yet).
func promQuery(base, q string) []promSample {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		Status string
		Data   struct{ Result []promSample }
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &out) != nil || out.Status != "success" {
		return nil
	}
	return out.Data.Result
}

// TestE2E_PrometheusScrapesGPUs: Debian's Prometheus scrapes a server and
// two clients with 3 simulated GPUs each while two GPU jobs run; PromQL
// finds one DCGM_FI_DEV_GPU_UTIL series per GPU of the job "train" on both
// nodes, labelled as dcgm-exporter labels them plus the allocation, and
// drover_gpus_allocated by model equals /v1/gpus.
func TestE2E_PrometheusScrapesGPUs(t *testing.T) {
	bin := prometheusBin(t)
	dir := reachableDir(t)
	ports := freePorts(t, 10)
	srvCfg := soloServerConfig(t, dir, ports[0:3], 0)
	appendFile(t, srvCfg, telemetryBlock)
	srv := launchAgent(t, ports[0], "-config", srvCfg)
	rpc := fmt.Sprintf("127.0.0.1:%d", ports[1])
	var clients []*agentProc
	for i, name := range []string{"client-1", "client-2"} {
		p := ports[3+3*i : 6+3*i]
		cfg := clusterClientConfig(t, dir, name, p, []string{rpc}, 3)
		appendFile(t, cfg, telemetryBlock)
		clients = append(clients, launchAgent(t, p[0], "-config", cfg))
	}
	waitFor(t, 60*time.Second, "two ready nodes", func() bool { return nodesReady(srv, 2) })

	// Two allocations of 2 GPUs cannot share a 3-GPU node: train spans
	// both nodes.
	for _, job := range []struct {
		id          string
		count, gpus int
	}{{"train", 2, 2}, {"infer", 1, 1}} {
		if r := srv.drover("job", "run", "-detach", writeFile(t, dir, job.id+".hcl", promJob(job.id, job.count, job.gpus))); r.code != 0 {
			t.Fatalf("job run %s: %d %s", job.id, r.code, r.stderr)
		}
	}
	trainGPUs := map[string]string{} // UUID -> node ID
	waitFor(t, 60*time.Second, "train's two allocations and infer's running", func() bool {
		running := 0
		clear(trainGPUs)
		for _, job := range []string{"train", "infer"} {
			for _, a := range srv.jobAllocs(job) {
				if a.ClientStatus != "running" {
					continue
				}
				running++
				for _, id := range a.gpus() {
					if job == "train" {
						trainGPUs[id] = a.NodeID
					}
				}
			}
		}
		return running == 3
	})
	nodes := map[string]bool{}
	for _, n := range trainGPUs {
		nodes[n] = true
	}
	if len(trainGPUs) != 4 || len(nodes) != 2 {
		t.Fatalf("train holds GPUs %v, want 4 on 2 nodes", trainGPUs)
	}

	var targets []string
	for _, a := range append([]*agentProc{srv}, clients...) {
		targets = append(targets, fmt.Sprintf("%q", strings.TrimPrefix(a.addr, "http://")))
	}
	prom := startPrometheus(t, bin, dir, ports[9], readmeScrapeConfig(t, targets, ""))

	var got []promSample
	waitFor(t, 60*time.Second, `DCGM_FI_DEV_GPU_UTIL{job="train"} has a series per GPU of train`, func() bool {
		got = promQuery(prom, `DCGM_FI_DEV_GPU_UTIL{job="train"}`)
		return len(got) == len(trainGPUs)
	})
	seen := map[string]bool{}
	for _, s := range got {
		m := s.Metric
		uuid := m["UUID"]
		if node, ok := trainGPUs[uuid]; !ok || m["node_id"] != node || seen[uuid] {
			t.Errorf("series %v: not one of train's GPUs %v on its node", m, trainGPUs)
		}
		seen[uuid] = true
		for _, l := range []string{"gpu", "device", "modelName", "Hostname", "alloc_id", "task_group", "namespace"} {
			if m[l] == "" {
				t.Errorf("series %v has no %s label", m, l)
			}
		}
		if m["simulated"] != "true" || m["task"] != "work" || m["modelName"] != "NVIDIA H100 80GB HBM3" {
			t.Errorf("series %v: want simulated, task work, model NVIDIA H100 80GB HBM3", m)
		}
	}

	var sum struct {
		Models []struct {
			Model     string
			Allocated int
		}
	}
	if code := srv.getJSON("/v1/gpus", &sum); code != 200 || len(sum.Models) != 1 {
		t.Fatalf("GET /v1/gpus: %d %+v", code, sum)
	}
	want := map[string]string{sum.Models[0].Model: fmt.Sprint(sum.Models[0].Allocated)}
	if sum.Models[0].Allocated != 5 {
		t.Fatalf("/v1/gpus allocated = %d, want 5", sum.Models[0].Allocated)
	}
	var last map[string]string
	waitFor(t, 30*time.Second, "drover_gpus_allocated by model equals /v1/gpus", func() bool {
		last = map[string]string{}
		for _, s := range promQuery(prom, `sum by (model) (drover_gpus_allocated)`) {
			last[s.Metric["model"]] = fmt.Sprint(s.Value[1])
		}
		return fmt.Sprint(sortedMap(last)) == fmt.Sprint(sortedMap(want))
	})
}

func sortedMap(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// TestE2E_PrometheusWithACLToken: with ACLs on, Prometheus scrapes with
// the README's config, sending a token whose policy allows agent read as
// a bearer token; the same scrape without it is refused (up is 0).
func TestE2E_PrometheusWithACLToken(t *testing.T) {
	bin := prometheusBin(t)
	dir := reachableDir(t)
	ports := freePorts(t, 4)
	cfg := agentConfig(t, dir, "acl-metrics", ports, 1)
	appendFile(t, cfg, telemetryBlock+"acl {\n  enabled = true\n}\n")
	a := launchAgent(t, ports[0], "-config", cfg)
	waitFor(t, 30*time.Second, "a leader", func() bool { return leaderOf(a) != "" })
	boot := a.drover("acl", "bootstrap")
	if boot.code != 0 {
		t.Fatalf("acl bootstrap: exit %d: %s%s", boot.code, boot.stdout, boot.stderr)
	}
	a.token = tokenField(t, boot.stdout, "Secret ID")
	policy := writeFile(t, dir, "scraper.hcl", "agent {\n  policy = \"read\"\n}\n")
	if r := a.drover("acl", "policy", "apply", "scraper", policy); r.code != 0 {
		t.Fatalf("acl policy apply: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	created := a.drover("acl", "token", "create", "-name", "prometheus", "-policy", "scraper")
	if created.code != 0 {
		t.Fatalf("acl token create: exit %d: %s%s", created.code, created.stdout, created.stderr)
	}
	tokenFile := writeFile(t, dir, "drover.token", tokenField(t, created.stdout, "Secret ID"))
	a.waitReady()

	target := []string{fmt.Sprintf("%q", strings.TrimPrefix(a.addr, "http://"))}
	withToken := readmeScrapeConfig(t, target, tokenFile)
	anonymous := strings.Replace(readmeScrapeConfig(t, target, ""), "job_name: drover", "job_name: drover-anonymous", 1)
	prom := startPrometheus(t, bin, dir, ports[3], withToken+"\n"+strings.TrimPrefix(anonymous, "scrape_configs:\n"))
	up := map[string]string{}
	waitFor(t, 60*time.Second, "up is 1 with the token and 0 without, and the GPU is scraped", func() bool {
		clear(up)
		for _, s := range promQuery(prom, "up") {
			up[s.Metric["job"]] = fmt.Sprint(s.Value[1])
		}
		return up["drover"] == "1" && up["drover-anonymous"] == "0" && len(promQuery(prom, "DCGM_FI_DEV_GPU_UTIL")) == 1
	})
}
