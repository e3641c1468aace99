package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// screenshotDir is where the UI tests write their screenshots (the README
// names it). DROVER_SCREENSHOTS overrides it.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("DROVER_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("screenshot dir: %v", err)
	}
	return dir
}

// chromiumPath finds Debian's chromium. CI installs it (.ci/run), so there
// a missing browser fails the test; elsewhere the test is skipped.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed; .ci/run should have installed it")
	}
	t.Skip("chromium is not installed (apt-get install chromium)")
	return ""
}

// browser is a headless Chromium tab that records console errors and
// requests to hosts other than the agent.
type browser struct {
	t        *testing.T
	ctx      context.Context
	base     string
	mu       sync.Mutex
	problems []string
	// pending maps the page's requests in flight to their URLs, for the
	// report of a step that timed out.
	pending map[network.RequestID]string
}

func newBrowser(t *testing.T, agentAddr string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(1400, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{t: t, base: agentAddr, pending: map[network.RequestID]string{}}
	agentHost := mustHost(t, agentAddr)
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithListener(func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				b.problem("console error: " + strings.Join(parts, " "))
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				b.problem("browser log error: " + ev.Entry.Text + " " + ev.Entry.URL)
			}
		case *runtime.EventExceptionThrown:
			b.problem(fmt.Sprintf("uncaught exception: %s %+v", ev.ExceptionDetails.Text, ev.ExceptionDetails.Exception))
		case *network.EventLoadingFinished:
			b.settled(ev.RequestID)
		case *network.EventLoadingFailed:
			b.settled(ev.RequestID)
		case *network.EventRequestWillBeSent:
			b.mu.Lock()
			b.pending[ev.RequestID] = ev.Request.Method + " " + ev.Request.URL
			b.mu.Unlock()
			u, err := url.Parse(ev.Request.URL)
			if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != agentHost {
				b.problem("request to another host: " + ev.Request.URL)
			}
		}
	}))
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	b.ctx = ctx
	// The first Run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

func mustHost(t *testing.T, addr string) string {
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func (b *browser) settled(id network.RequestID) {
	b.mu.Lock()
	delete(b.pending, id)
	b.mu.Unlock()
}

// inFlight lists the page's requests that have not finished.
func (b *browser) inFlight() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.pending))
	for _, u := range b.pending {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

func (b *browser) problem(p string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, p)
}

// checkClean fails the test if the page logged errors or reached out.
func (b *browser) checkClean() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("browser: %s", p)
	}
	b.problems = nil
}

// get runs one action with a timeout and returns its value.
func get[T any](b *browser, what string, action chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		// Say where the page stood, to tell a slow machine from a page
		// that never finished: its load state, its main element and the
		// requests still in flight.
		diag, dcancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer dcancel()
		loc, _ := chromedp.Run(diag, chromedp.Location())
		page, perr := chromedp.Run(diag, chromedp.Evaluate[string](`document.readyState + " | main: " +
			(document.querySelector("main")?.outerHTML || "none").slice(0, 1500)`))
		if perr != nil {
			page = "unreadable: " + perr.Error()
		}
		b.t.Fatalf("%s (at %s): %v\npage: %s\nrequests in flight: %q", what, loc, err, page, b.inFlight())
	}
	return v
}

// do runs steps in order with a timeout.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	get(b, what, chromedp.Steps(steps...))
}

// open loads a UI route afresh (from a blank page, so nothing is reused)
// and waits until the page says its first data has rendered; it returns
// how long that took from the start of the load.
func (b *browser) open(route string) time.Duration {
	b.t.Helper()
	b.do("leave the page", chromedp.Navigate("about:blank"))
	start := time.Now()
	b.do("open "+route,
		chromedp.Navigate(b.base+"/ui/#"+route),
		chromedp.WaitVisible(chromedp.CSS(`main[data-ready="1"]`)),
	)
	return time.Since(start)
}

// text returns the trimmed text of the first element matching sel, once
// one is visible. It reads in one script: live pages re-render, and a
// node found by one DevTools call can be gone by the next ("No node with
// given id found").
func (b *browser) text(sel string) string {
	b.t.Helper()
	b.do("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	return strings.TrimSpace(get(b, "read "+sel, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q)||{}).textContent||""`, sel))))
}

func (b *browser) count(sel string) int {
	b.t.Helper()
	return get(b, "count "+sel, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
}

func (b *browser) screenshot(dir, name string) {
	b.t.Helper()
	png := get(b, "screenshot "+name, chromedp.FullScreenshot(100)) // quality 100 means PNG
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatalf("write %s: %v", path, err)
	}
	b.t.Logf("screenshot: %s", path)
}

// waitText polls until the element's text satisfies ok.
func (b *browser) waitText(sel string, timeout time.Duration, ok func(string) bool) string {
	b.t.Helper()
	var s string
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		s, _ = chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q)||{}).textContent||""`, sel)))
		cancel()
		if ok(strings.TrimSpace(s)) {
			return s
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out after %v waiting for text of %s; last text %q", timeout, sel, strings.TrimSpace(s))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type gpuSummary struct {
	Total, Allocated, Free, Unhealthy int
}

// TestE2E_UI drives the built-in UI in headless Chromium against a real
// agent with simulated GPUs and a running GPU job.
func TestE2E_UI(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-ui", ports, 4))
	job := writeFile(t, dir, "ui.hcl", gpuJob("ui-train", 2, "echo hello-from-task; sleep 600"))
	if r := a.drover("job", "run", job); r.code != 0 {
		t.Fatalf("job run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	alloc := a.waitAlloc("ui-train", "running")
	b := newBrowser(t, a.addr)
	shots := screenshotDir(t)

	// GET /ui/ serves the app; / redirects there.
	if code, body := a.do("GET", "/ui/", ""); code != 200 || !strings.Contains(body, "<html") {
		t.Fatalf("GET /ui/: status %d", code)
	}
	resp, err := http.Get(a.addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/ui/" {
		t.Errorf("GET /: ended at %s with %d, want a redirect to /ui/", resp.Request.URL.Path, resp.StatusCode)
	}

	// Overview: the GPU counters match the API.
	b.open("/")
	var want gpuSummary
	if code := a.getJSON("/v1/gpus", &want); code != 200 {
		t.Fatalf("GET /v1/gpus: %d", code)
	}
	for id, n := range map[string]int{"gpu-total": want.Total, "gpu-allocated": want.Allocated, "gpu-free": want.Free, "gpu-unhealthy": want.Unhealthy} {
		if got := b.text(`[data-testid="` + id + `"]`); got != strconv.Itoa(n) {
			t.Errorf("overview %s: got %q, want %d", id, got, n)
		}
	}
	if want.Total != 4 || want.Allocated != 2 {
		t.Errorf("API GPU summary: got %+v, want 4 total, 2 allocated", want)
	}
	b.screenshot(shots, "overview")

	// Node page: one tile per GPU; the job's GPUs name its allocation.
	b.open("/nodes/" + alloc.NodeID)
	if n := b.count(`[data-testid="gpu-tile"]`); n != 4 {
		t.Errorf("node page: got %d GPU tiles, want 4", n)
	}
	for _, id := range alloc.gpus() {
		holder := b.text(`[data-testid="gpu-tile"][data-gpu-id="` + id + `"] [data-testid="gpu-holder"]`)
		if !strings.Contains(holder, alloc.ID[:8]) {
			t.Errorf("GPU %s tile: holder %q, want allocation %s", id, holder, alloc.ID[:8])
		}
	}
	b.screenshot(shots, "node")

	// Job page: the allocation is listed.
	b.open("/jobs/ui-train")
	if n := b.count(`[data-testid="alloc-row"][data-alloc-id="` + alloc.ID + `"]`); n != 1 {
		t.Errorf("job page: allocation row for %s: got %d, want 1", alloc.ID, n)
	}
	// A batch job has no deployment; the panel says so (a service job's
	// deployment table is in TestE2E_UIDeployment).
	if got := b.waitText(`[data-testid="deployment"]`, 10*time.Second, func(s string) bool { return s != "" }); !strings.Contains(got, "No deployment") {
		t.Errorf("job page: deployment panel %q, want \"No deployment.\"", got)
	}
	b.screenshot(shots, "job")

	// Restart: the running allocation's task restarts in place.
	b.do("click restart", chromedp.Click(chromedp.CSS(`[data-testid="restart-button"]`)))
	waitFor(t, 20*time.Second, "the task to be restarted", func() bool {
		var al struct {
			TaskStates map[string]struct{ Restarts int }
		}
		return a.getJSON("/v1/allocation/"+alloc.ID, &al) == 200 && al.TaskStates["print"].Restarts >= 1
	})
	if allocs := a.jobAllocs("ui-train"); len(allocs) != 1 {
		t.Errorf("after restart: got %d allocations, want the same 1", len(allocs))
	}

	// Allocation page: the task's log line shows.
	b.open("/allocations/" + alloc.ID)
	b.waitText(`[data-testid="log"]`, 10*time.Second, func(s string) bool { return strings.Contains(s, "hello-from-task") })

	// Exec panel: a command runs in the task, in a terminal, and its exit
	// code shows.
	b.do("run a command in the exec panel",
		chromedp.SetValue(chromedp.CSS(`[data-testid="exec-command"]`), `["/bin/sh", "-c", "echo ui-exec-$((6*7)); exit 4"]`),
		chromedp.Click(chromedp.CSS(`[data-testid="exec-run"]`)),
	)
	b.waitText(`[data-testid="exec-term"]`, 15*time.Second, func(s string) bool { return strings.Contains(s, "ui-exec-42") })
	b.waitText(`[data-testid="exec-status"]`, 15*time.Second, func(s string) bool { return s == "exited with code 4" })
	b.screenshot(shots, "exec")

	// Paste-HCL form: run a job and watch it start without a reload.
	b.open("/jobs/new")
	get(b, "mark the page", chromedp.Evaluate[int](`window.__droverNoReload = 1`))
	hcl := gpuJob("from-ui", 1, "echo from-ui; sleep 600")
	b.do("fill and run",
		chromedp.SetValue(chromedp.CSS(`[data-testid="hcl-input"]`), hcl),
		chromedp.Click(chromedp.CSS(`[data-testid="run-button"]`)),
	)
	b.waitText(`[data-testid="alloc-status"]`, 20*time.Second, func(s string) bool { return s == "running" })
	if marker := get(b, "check no reload", chromedp.Evaluate[int](`window.__droverNoReload || 0`)); marker != 1 {
		t.Errorf("the page reloaded while the job started")
	}
	if allocs := a.jobAllocs("from-ui"); len(allocs) != 1 {
		t.Errorf("from-ui: got %d allocations, want 1", len(allocs))
	}
	b.checkClean()
}
