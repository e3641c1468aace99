package allocrunner

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(body))
	}
	_ = tw.Close()
	_ = gz.Close()
	return buf.Bytes()
}

func TestFetchArtifact(t *testing.T) {
	model := []byte("weights-v1")
	sum := sha256.Sum256(model)
	archive := tarGz(t, map[string]string{"conf/app.yaml": "a: 1"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/model.bin":
			if r.Header.Get("X-Token") != "t0k" {
				http.Error(w, "no token", http.StatusForbidden)
				return
			}
			_, _ = w.Write(model)
		case "/bundle.tar.gz":
			_, _ = w.Write(archive)
		case "/big":
			_, _ = w.Write(bytes.Repeat([]byte("x"), 4096))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	allocDir := t.TempDir()
	taskDir := filepath.Join(allocDir, "t")
	if err := os.MkdirAll(taskDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := TaskFilesConfig{ArtifactMaxSize: 1024}
	fetch := func(a *structs.TaskArtifact) error {
		a.Canonicalize()
		return FetchArtifact(ctx, a, taskDir, allocDir, cfg)
	}

	ok := &structs.TaskArtifact{GetterSource: srv.URL + "/model.bin", GetterHeaders: map[string]string{"X-Token": "t0k"},
		GetterOptions: map[string]string{"checksum": "sha256:" + hex.EncodeToString(sum[:])}}
	if err := fetch(ok); err != nil {
		t.Fatalf("checksum ok: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(taskDir, "local", "model.bin")); string(got) != "weights-v1" {
		t.Fatalf("local/model.bin = %q", got)
	}
	if err := fetch(&structs.TaskArtifact{GetterSource: srv.URL + "/bundle.tar.gz", RelativeDest: "local/bundle"}); err != nil {
		t.Fatalf("archive: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(taskDir, "local", "bundle", "conf", "app.yaml")); string(got) != "a: 1" {
		t.Fatalf("unpacked file = %q", got)
	}

	bad := &structs.TaskArtifact{GetterSource: srv.URL + "/model.bin", GetterHeaders: map[string]string{"X-Token": "t0k"}, RelativeDest: "local/bad",
		GetterOptions: map[string]string{"checksum": "sha256:" + strings.Repeat("0", 64)}}
	if err := fetch(bad); err == nil || !strings.Contains(strings.ToLower(err.Error()), "checksums did not match") {
		t.Errorf("checksum mismatch = %v, want a checksum error", err)
	}
	if err := fetch(&structs.TaskArtifact{GetterSource: srv.URL + "/big", RelativeDest: "local/big"}); err == nil || !strings.Contains(err.Error(), "over the size limit") {
		t.Errorf("a download over the size bound: %v, want refused", err)
	}

	refused := []struct{ src, dest, want string }{
		{"s3::https://bucket.s3.amazonaws.com/x", "", "s3 getter is not supported"},
		{"git::https://github.com/x/y", "", "git getter is not supported"},
		{"gcs://bucket/x", "", "scheme gcs is not supported"},
		{"github.com/hashicorp/nomad", "", "no scheme is not supported"},
		{"file:///etc/passwd", "", "must be inside the allocation directory"},
		{srv.URL + "/model.bin", "../../etc", "escapes the task directory"},
	}
	for _, tt := range refused {
		err := fetch(&structs.TaskArtifact{GetterSource: tt.src, RelativeDest: tt.dest})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, drivers.ErrInvalidConfig) {
			t.Errorf("%s -> %q: %v, want unrecoverable %q", tt.src, tt.dest, err, tt.want)
		}
	}

	// A file inside the allocation directory is fine.
	shared := filepath.Join(allocDir, "alloc", "data", "in.txt")
	_ = os.MkdirAll(filepath.Dir(shared), 0o755)
	_ = os.WriteFile(shared, []byte("shared"), 0o644)
	if err := fetch(&structs.TaskArtifact{GetterSource: "file://" + shared, RelativeDest: "local/in", GetterMode: "file"}); err != nil {
		t.Fatalf("file source in the alloc dir: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(taskDir, "local", "in")); string(got) != "shared" {
		t.Fatalf("local/in = %q", got)
	}
}
