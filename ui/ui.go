// Package ui serves Drover's built-in web UI: plain HTML, CSS and ES
// modules embedded in the binary, with no build step and no request to any
// host but the agent. The pages talk to the agent's /v1 HTTP API from the
// browser; this package holds no API logic and must not import the server,
// the client or the agent.
//
// Mount it at "/ui/" and let it answer "/" too, which it redirects:
//
//	mux.Handle("GET /ui/", ui.Handler())
//	mux.Handle("GET /{$}", ui.Handler())
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Prefix is the path the UI is served under.
const Prefix = "/ui/"

// contentSecurityPolicy keeps the pages to the agent's own origin: no
// external scripts, styles, fonts or API calls even if an asset slipped one
// in. Inline styles are allowed for computed sizes and colours.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; " +
	"base-uri 'self'; form-action 'self'; frame-ancestors 'none'"

// contentTypes are set explicitly so that a host's mime.types cannot change
// them (a module script served as text/plain does not run).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".json": "application/json",
}

// asset is one embedded file, read once.
type asset struct {
	data []byte
	etag string
}

type handler struct {
	files map[string]asset // by path relative to assets/, e.g. "js/api.js"
}

// Handler returns the UI handler. It answers "/" and "/ui" with a redirect
// to "/ui/", serves index.html at "/ui/" and the other assets below it,
// with Cache-Control: no-cache and an ETag so that a new binary shows its
// new UI at once while an unchanged one answers 304.
func Handler() http.Handler {
	root, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embed pattern above guarantees the directory
	}
	h := &handler{files: map[string]asset{}}
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		h.files[p] = asset{data: data, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic(err) // reading an embed.FS does not fail
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, r.Method+" "+r.URL.Path+": method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if p == "" || p == "/" || p == "/ui" {
		http.Redirect(w, r, Prefix, http.StatusFound)
		return
	}
	rel, ok := strings.CutPrefix(p, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if rel == "" {
		rel = "index.html"
	}
	rel = strings.TrimPrefix(path.Clean("/"+rel), "/")
	f, ok := h.files[rel]
	if !ok {
		http.Error(w, "no such UI file: "+p, http.StatusNotFound)
		return
	}
	ext := path.Ext(rel)
	hdr := w.Header()
	if ct, ok := contentTypes[ext]; ok {
		hdr.Set("Content-Type", ct)
	}
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", f.etag)
	hdr.Set("X-Content-Type-Options", "nosniff")
	if ext == ".html" {
		hdr.Set("Content-Security-Policy", contentSecurityPolicy)
		hdr.Set("Referrer-Policy", "no-referrer")
	}
	http.ServeContent(w, r, rel, time.Time{}, bytes.NewReader(f.data))
}
