package ui

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// assetFiles returns every embedded file, by path relative to assets/.
func assetFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		files[strings.TrimPrefix(p, "assets/")] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestIndexServed(t *testing.T) {
	h := Handler()
	rec := get(t, h, "/ui/", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /ui/: got %d, want 200", rec.Code)
	}
	for k, want := range map[string]string{
		"Content-Type":  "text/html; charset=utf-8",
		"Cache-Control": "no-cache",
	} {
		if got := rec.Header().Get(k); got != want {
			t.Errorf("GET /ui/ %s: got %q, want %q", k, got, want)
		}
	}
	if !strings.Contains(rec.Body.String(), `<main id="main">`) {
		t.Errorf("GET /ui/: body has no <main id=\"main\">")
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("GET /ui/ Content-Security-Policy: got %q, want default-src 'self'", csp)
	}

	etag := rec.Header().Get("ETag")
	if rec := get(t, h, "/ui/", map[string]string{"If-None-Match": etag}); rec.Code != http.StatusNotModified {
		t.Errorf("GET /ui/ with If-None-Match %s: got %d, want 304", etag, rec.Code)
	}
}

func TestRedirectsAndMisses(t *testing.T) {
	h := Handler()
	tests := []struct {
		target   string
		code     int
		location string
	}{
		{"/", http.StatusFound, "/ui/"},
		{"/ui", http.StatusFound, "/ui/"},
		{"/ui/no-such.js", http.StatusNotFound, ""},
		{"/ui/../ui.go", http.StatusNotFound, ""},
		{"/elsewhere", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			rec := get(t, h, tt.target, nil)
			if rec.Code != tt.code || rec.Header().Get("Location") != tt.location {
				t.Errorf("GET %s: got %d %q, want %d %q", tt.target, rec.Code, rec.Header().Get("Location"), tt.code, tt.location)
			}
		})
	}
	req := httptest.NewRequest(http.MethodPost, "/ui/", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/: got %d, want 405", rec.Code)
	}
}

var (
	attrRef = regexp.MustCompile(`(?:src|href)="([^"]*)"`)
	// Static imports and re-exports, side-effect imports, dynamic imports.
	importRefs = []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]`),
		regexp.MustCompile(`(?m)^\s*import\s*['"]([^'"]+)['"]`),
		regexp.MustCompile(`\bimport\(\s*['"]([^'"]+)['"]\s*\)`),
	}
)

// TestIndexReferencesResolve checks that every file index.html names is
// embedded and served with a type the browser accepts.
func TestIndexReferencesResolve(t *testing.T) {
	h := Handler()
	index := assetFiles(t)["index.html"]
	wantTypes := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	n := 0
	for _, m := range attrRef.FindAllStringSubmatch(index, -1) {
		ref := m[1]
		if strings.HasPrefix(ref, "#") || strings.HasPrefix(ref, "data:") {
			continue
		}
		n++
		rec := get(t, h, "/ui/"+ref, nil)
		if rec.Code != http.StatusOK {
			t.Errorf("index.html references %q: GET /ui/%s got %d", ref, ref, rec.Code)
			continue
		}
		if want, ok := wantTypes[path.Ext(ref)]; ok && rec.Header().Get("Content-Type") != want {
			t.Errorf("GET /ui/%s Content-Type: got %q, want %q", ref, rec.Header().Get("Content-Type"), want)
		}
	}
	if n < 2 {
		t.Errorf("index.html: found %d asset references, want the stylesheet and the entry module", n)
	}
}

// TestModuleImportsResolve checks that every ES module import is a
// relative path to an embedded file, and that every module is reachable
// from the entry point (no dead files).
func TestModuleImportsResolve(t *testing.T) {
	files := assetFiles(t)
	reached := map[string]bool{}
	var visit func(string)
	visit = func(file string) {
		if reached[file] {
			return
		}
		reached[file] = true
		for _, re := range importRefs {
			for _, m := range re.FindAllStringSubmatch(files[file], -1) {
				spec := m[1]
				if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") {
					t.Errorf("%s imports %q: want a relative path (browsers resolve no bare names)", file, spec)
					continue
				}
				target := path.Join(path.Dir(file), spec)
				if _, ok := files[target]; !ok {
					t.Errorf("%s imports %q: %s is not embedded", file, spec, target)
					continue
				}
				visit(target)
			}
		}
	}
	visit("js/app.js")
	for f := range files {
		if strings.HasSuffix(f, ".js") && !reached[f] {
			t.Errorf("%s is embedded but no module imports it", f)
		}
	}
}

var (
	absoluteURL = regexp.MustCompile(`(?i)\bhttps?://[^\s'"<>)]*`)
	// A string, attribute or url() that starts with "//host" is a
	// protocol-relative URL.
	protocolRelative = regexp.MustCompile("[\"'`(=]\\s*//[A-Za-z0-9]")
)

// TestNoExternalHosts checks that no asset names another host: the UI must
// work with no network but the agent.
func TestNoExternalHosts(t *testing.T) {
	for name, text := range assetFiles(t) {
		for _, u := range absoluteURL.FindAllString(text, -1) {
			if u == "http://www.w3.org/2000/svg" { // an XML namespace, not a request
				continue
			}
			t.Errorf("%s references %s: assets must not reach hosts but the agent", name, u)
		}
		if loc := protocolRelative.FindStringIndex(text); loc != nil {
			t.Errorf("%s has a protocol-relative URL near %q", name, text[loc[0]:min(len(text), loc[1]+30)])
		}
	}
}

// TestHooks checks that the data-testid hooks the browser tests rely on
// are still in the assets.
func TestHooks(t *testing.T) {
	var all strings.Builder
	for _, text := range assetFiles(t) {
		all.WriteString(text)
	}
	for _, id := range []string{
		"gpu-total", "gpu-allocated", "gpu-free", "gpu-unhealthy", "heatmap",
		"node-list", "node-row", "gpu-tile", "gpu-holder", "alloc-row", "alloc-status",
		"log", "hcl-input", "plan-button", "run-button", "error", "page-ready",
	} {
		if !strings.Contains(all.String(), `"`+id+`"`) && !strings.Contains(all.String(), `'`+id+`'`) {
			t.Errorf("no asset sets data-testid %q", id)
		}
	}
	if !strings.Contains(all.String(), "data-gpu-id=") || !strings.Contains(all.String(), "data-alloc-id=") {
		t.Errorf("data-gpu-id or data-alloc-id attribute missing")
	}
}

// TestSizeBudget keeps the UI small: it loads on every page view. Vendored
// code (vendor/: the exec panel's terminal) is loaded only when used, by
// a dynamic import, and has its own budget.
func TestSizeBudget(t *testing.T) {
	const budget, vendorBudget = 123 << 10, 420 << 10 // +1 KiB each: device attributes as Nomad's Attribute objects (attrText), allocation ports, the job's deployment
	total, vendor := 0, 0
	staticVendor := regexp.MustCompile(`(?m)^\s*import\b[^;(]*vendor/`)
	for name, text := range assetFiles(t) {
		if strings.HasPrefix(name, "vendor/") {
			vendor += len(text)
			continue
		}
		total += len(text)
		if staticVendor.MatchString(text) {
			t.Errorf("%s imports vendor code statically: load it with import() where it is used", name)
		}
	}
	if total > budget {
		t.Errorf("assets total %d bytes, over the %d budget", total, budget)
	}
	if vendor > vendorBudget {
		t.Errorf("vendored assets total %d bytes, over the %d budget", vendor, vendorBudget)
	}
}
