package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	nomad "github.com/hashicorp/nomad/api"
)

// tokenField reads "Key = value" from `drover acl ... ` output.
func tokenField(t *testing.T, out, key string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `\s+= (\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %q in:\n%s", key, out)
	}
	return m[1]
}

// TestE2E_ACL runs an agent with ACLs and the audit log on: anonymous
// requests are denied with Nomad's one-line 403, the CLI bootstraps and
// makes a namespace-scoped token, the official Nomad client works with
// that token and is refused without it or outside its namespace, a
// cross-site form post is refused, and the audit log records denied and
// allowed writes by accessor while no log ever holds a secret.
func TestE2E_ACL(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	cfg := agentConfig(t, dir, "acl-node", ports, 1)
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("acl {\n  enabled = true\n}\naudit {\n  enabled = true\n}\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	a := launchAgent(t, ports[0], "-config", cfg)
	waitFor(t, 30*time.Second, "a leader", func() bool { return leaderOf(a) != "" })

	// Anonymous: denied, one line, as Nomad answers.
	code, body := a.do(http.MethodGet, "/v1/jobs", "")
	if code != http.StatusForbidden || body != "Permission denied\n" {
		t.Fatalf("anonymous GET /v1/jobs = %d %q, want 403 \"Permission denied\"", code, body)
	}

	boot := a.drover("acl", "bootstrap")
	if boot.code != 0 {
		t.Fatalf("acl bootstrap: exit %d: %s%s", boot.code, boot.stdout, boot.stderr)
	}
	mgmtSecret := tokenField(t, boot.stdout, "Secret ID")
	if again := a.drover("acl", "bootstrap"); again.code == 0 {
		t.Fatalf("a second bootstrap succeeded: %s", again.stdout)
	}
	a.token = mgmtSecret
	a.waitReady()

	if r := a.drover("namespace", "apply", "other"); r.code != 0 {
		t.Fatalf("namespace apply: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	// alloc-node-exec: exec into a raw_exec task is exec on the node.
	policy := writeFile(t, dir, "dev.hcl", `namespace "default" {
  policy       = "write"
  capabilities = ["alloc-node-exec"]
}
node { policy = "read" }
`)
	if r := a.drover("acl", "policy", "apply", "-description", "default namespace", "dev", policy); r.code != 0 {
		t.Fatalf("acl policy apply: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	bad := writeFile(t, dir, "bad.hcl", "namespace \"default\" {\n  policy = \"sudo\"\n}\n")
	if r := a.drover("acl", "policy", "apply", "bad", bad); r.code == 0 || !strings.Contains(r.stderr, "bad:2,") {
		t.Errorf("bad policy: exit %d, stderr %q; want a refusal naming line 2", r.code, r.stderr)
	}
	created := a.drover("acl", "token", "create", "-name", "dev", "-policy", "dev")
	if created.code != 0 {
		t.Fatalf("acl token create: exit %d: %s%s", created.code, created.stdout, created.stderr)
	}
	devSecret := tokenField(t, created.stdout, "Secret ID")
	devAccessor := tokenField(t, created.stdout, "Accessor ID")

	// The official Nomad client: with the token it registers and reads.
	client := func(token string) *nomad.Client {
		c, err := nomad.NewClient(&nomad.Config{Address: a.addr, SecretID: token})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	job := nomad.NewBatchJob("acl-job", "acl-job", "global", 50)
	job.Datacenters = []string{"dc1"}
	job.AddTaskGroup(nomad.NewTaskGroup("g", 1).AddTask(nomad.NewTask("t", "raw_exec").
		SetConfig("command", "/bin/true").Require(&nomad.Resources{CPU: intp(100), MemoryMB: intp(64)})))
	if _, _, err := client("").Jobs().Register(job, nil); err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Errorf("register without a token: %v, want a permission error", err)
	}
	if _, _, err := client(devSecret).Jobs().Register(job, nil); err != nil {
		t.Fatalf("register with the dev token: %v", err)
	}
	if _, _, err := client(devSecret).Jobs().Info("acl-job", nil); err != nil {
		t.Errorf("read with the dev token: %v", err)
	}
	other := *job
	other.Namespace = strp("other")
	if _, _, err := client(devSecret).Jobs().Register(&other, nil); err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Errorf("register in another namespace: %v, want a permission error", err)
	}
	if _, _, err := client(mgmtSecret).Jobs().Register(&other, nil); err != nil {
		t.Fatalf("register in other with the management token: %v", err)
	}
	stubs, _, err := client(devSecret).Jobs().List(&nomad.QueryOptions{Namespace: "*"})
	if err != nil || len(stubs) != 1 || stubs[0].Namespace != "default" {
		t.Errorf("dev token listing *: %+v, %v; want only the default namespace's job", stubs, err)
	}

	// The web UI: refused, it asks for a token; with the dev token it
	// shows the job, and its exec terminal runs a command (the token in
	// the websocket's first message).
	if _, err := exec.LookPath("chromium"); err == nil || os.Getenv("CI") != "" {
		sleeper := nomad.NewBatchJob("acl-sleep", "acl-sleep", "global", 50)
		sleeper.Datacenters = []string{"dc1"}
		sleeper.AddTaskGroup(nomad.NewTaskGroup("g", 1).AddTask(nomad.NewTask("t", "raw_exec").
			SetConfig("command", "/bin/sleep").SetConfig("args", []string{"300"}).Require(&nomad.Resources{CPU: intp(100), MemoryMB: intp(64)})))
		if _, _, err := client(devSecret).Jobs().Register(sleeper, nil); err != nil {
			t.Fatalf("register acl-sleep: %v", err)
		}
		var running string
		waitFor(t, 30*time.Second, "acl-sleep running", func() bool {
			allocs, _, err := client(devSecret).Jobs().Allocations("acl-sleep", false, nil)
			if err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "running" {
				running = allocs[0].ID
			}
			return running != ""
		})
		b := newBrowser(t, a.addr)
		b.open("/jobs")
		if n := b.count(`[data-testid="token-form"]`); n != 1 {
			t.Fatalf("jobs page without a token: %d token forms, want 1", n)
		}
		b.do("enter the token",
			chromedp.SetValue(chromedp.CSS(`[data-testid="token-input"]`), devSecret),
			chromedp.Click(chromedp.CSS(`[data-testid="token-form"] button`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="job-row"][data-job-id="acl-sleep"]`)),
		)
		b.open("/allocations/" + running)
		b.do("run a command in the exec panel",
			chromedp.SetValue(chromedp.CSS(`[data-testid="exec-command"]`), `["/bin/sh", "-c", "echo acl-exec-$((6*7))"]`),
			chromedp.Click(chromedp.CSS(`[data-testid="exec-run"]`)),
		)
		b.waitText(`[data-testid="exec-term"]`, 15*time.Second, func(s string) bool { return strings.Contains(s, "acl-exec-42") })
	}

	// A cross-site form post, as a browser sends it: text/plain, no
	// token, another site's Origin and Fetch metadata. Refused.
	a.token = ""
	req, _ := http.NewRequest(http.MethodPost, a.addr+"/v1/jobs", strings.NewReader(`{"Job":{"ID":"csrf"}}`))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("text/plain POST without a token = %d, want 403", resp.StatusCode)
	}

	// The audit log: denied and allowed writes, by accessor.
	entries := readAudit(t, filepath.Join(dir, "data", "audit", "audit.log"))
	var denied, allowed bool
	for _, e := range entries {
		if e["path"] == "/v1/jobs" && e["outcome"] == "denied" && e["accessor"] == "anonymous" {
			denied = true
		}
		if strings.HasPrefix(e["path"].(string), "/v1/job") && e["outcome"] == "allowed" && e["accessor"] == devAccessor {
			allowed = true
		}
	}
	if !denied || !allowed {
		t.Errorf("audit log: denied anonymous write %t, allowed write by %s %t; entries:\n%v", denied, devAccessor, allowed, entries)
	}

	// No log holds a secret.
	raw, err := os.ReadFile(filepath.Join(dir, "data", "audit", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	for name, secret := range map[string]string{"bootstrap": mgmtSecret, "dev": devSecret} {
		if strings.Contains(a.logs.String(), secret) || strings.Contains(string(raw), secret) {
			t.Errorf("the %s token's secret appears in a log", name)
		}
	}
}

func readAudit(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

func strp(s string) *string { return &s }
