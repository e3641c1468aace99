package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	getter "github.com/hashicorp/go-getter/v2"

	"github.com/droverhq/drover/client/template"
	"github.com/droverhq/drover/structs"
)

// Defaults of the artifact bounds (TaskFilesConfig).
const (
	DefaultArtifactMaxSize = 1 << 30
	DefaultArtifactTimeout = 30 * time.Minute
	// artifactMaxFiles bounds the files one archive may unpack into.
	artifactMaxFiles = 100000
)

// artifactSchemes are the sources Drover fetches.
var artifactSchemes = []string{"http", "https", "file"}

// artifactsDone marks the task runners whose artifacts are fetched: a
// restart does not fetch them again (as in Nomad).
var artifactsDone sync.Map

// fetchArtifacts downloads the task's artifacts into its directory,
// once per task runner.
func (tr *taskRunner) fetchArtifacts(ctx context.Context, taskDir string, env map[string]string) error {
	if len(tr.task.Artifacts) == 0 {
		return nil
	}
	if _, done := artifactsDone.Load(tr); done {
		return nil
	}
	tr.emit(&structs.TaskEvent{Type: TaskDownloadingArtifacts, Message: "Client is downloading artifacts"}, nil)
	rt := Runtime{Env: env, Node: tr.ar.node}
	for _, a := range tr.task.Artifacts {
		if err := FetchArtifact(ctx, rt.artifact(a, taskDir), taskDir, tr.ar.allocDir, tr.ar.files); err != nil { // interpolate_paths.go
			return err
		}
	}
	artifactsDone.Store(tr, true)
	go func() { <-tr.ar.waitCh; artifactsDone.Delete(tr) }()
	return nil
}

// FetchArtifact downloads one artifact into taskDir through go-getter
// with only the http, https and file getters: the checksum option is
// verified, archives are unpacked, the download and what it unpacks are
// bounded by cfg.ArtifactMaxSize and cfg.ArtifactTimeout, the
// destination stays inside taskDir, and a file source must be inside
// allocDir (a job must not copy the client host's files). go-getter
// works in a private staging dir; the result is copied into taskDir
// through an os.Root (artifact_stage.go). A source or destination Drover
// refuses is unrecoverable.
func FetchArtifact(ctx context.Context, a *structs.TaskArtifact, taskDir, allocDir string, cfg TaskFilesConfig) error {
	u, local, err := artifactSource(a, allocDir)
	if err != nil {
		return unrecoverable(err)
	}
	dest := a.RelativeDest
	if dest == "" {
		dest = "local/"
	}
	if _, err := template.ResolveInside(taskDir, dest); err != nil {
		return unrecoverable(fmt.Errorf("artifact %s: destination: %w", a.GetterSource, err))
	}
	maxSize := cfg.ArtifactMaxSize
	if maxSize <= 0 {
		maxSize = DefaultArtifactMaxSize
	}
	timeout := cfg.ArtifactTimeout
	if timeout <= 0 {
		timeout = DefaultArtifactTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// In the alloc dir: on the disk the artifact goes to (not a small
	// tmpfs), and 0700, so that no task of another user reaches it.
	stage, err := os.MkdirTemp(allocDir, ".artifact-")
	if err != nil {
		return fmt.Errorf("artifact %s: staging dir: %w", a.GetterSource, err)
	}
	defer func() { _ = os.RemoveAll(stage) }()
	if local != nil {
		if u.Path, err = stageFileSource(local.root, local.path, filepath.Join(stage, "src"), maxSize); err != nil {
			return fmt.Errorf("artifact %s: %w", a.GetterSource, err)
		}
	}
	staged := filepath.Join(stage, "out")
	dst := filepath.Join(staged, filepath.Clean(dest))
	header := http.Header{}
	for k, v := range a.GetterHeaders {
		header.Set(k, v)
	}
	client := &getter.Client{
		Getters: []getter.Getter{
			&getter.HttpGetter{Header: header, XTerraformGetDisabled: true, ReadTimeout: timeout,
				Client: &http.Client{Transport: &limitTransport{base: http.DefaultTransport, max: maxSize}}},
			&getter.FileGetter{},
		},
		Decompressors:   getter.LimitedDecompressors(artifactMaxFiles, maxSize),
		DisableSymlinks: true,
	}
	req := &getter.Request{Src: u.String(), Dst: dst, Pwd: taskDir, GetMode: artifactMode(a.GetterMode), Copy: true, DisableSymlinks: true}
	if _, err := client.Get(ctx, req); err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("artifact %s: download not done after %s", a.GetterSource, timeout)
		}
		return fmt.Errorf("artifact %s: %w", a.GetterSource, err)
	}
	if err := placeStaged(stage, staged, taskDir); err != nil {
		return fmt.Errorf("artifact %s: %w", a.GetterSource, err)
	}
	return nil
}

func artifactMode(m string) getter.Mode {
	switch m {
	case structs.ArtifactModeFile:
		return getter.ModeFile
	case structs.ArtifactModeDir:
		return getter.ModeDir
	}
	return getter.ModeAny
}

// localSource is a file source: path, resolved, inside root (the
// allocation dir, resolved).
type localSource struct{ root, path string }

// artifactSource checks the source and returns it with the options as
// go-getter reads them (query parameters), and for a file source where
// it lies (FetchArtifact copies it from there).
func artifactSource(a *structs.TaskArtifact, allocDir string) (*url.URL, *localSource, error) {
	raw := a.GetterSource
	if forced, _, ok := strings.Cut(raw, "::"); ok && !strings.Contains(forced, "/") {
		return nil, nil, fmt.Errorf("artifact %s: the %s getter is not supported by Drover (http, https and file sources only)", raw, forced)
	}
	var local *localSource
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("artifact %s: %w", raw, err)
	}
	if !slices.Contains(artifactSchemes, u.Scheme) {
		what := "no scheme"
		if u.Scheme != "" {
			what = "scheme " + u.Scheme
		}
		return nil, nil, fmt.Errorf("artifact %s: %s is not supported by Drover (http, https and file sources only; s3, gcs, git and hg are not)", raw, what)
	}
	if u.Scheme == "file" {
		real, err := filepath.EvalSymlinks(u.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("artifact %s: %w", raw, err)
		}
		root, err := filepath.EvalSymlinks(allocDir)
		if err != nil || !strings.HasPrefix(real, root+string(filepath.Separator)) {
			return nil, nil, fmt.Errorf("artifact %s: a file source must be inside the allocation directory", raw)
		}
		u.Path, local = real, &localSource{root: root, path: real}
	}
	q := u.Query()
	for k, v := range a.GetterOptions {
		if !slices.Contains([]string{"checksum", "archive"}, k) {
			return nil, nil, errors.New("artifact " + raw + ": option " + k + " is not supported")
		}
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u, local, nil
}

// limitTransport fails a response body past max bytes (go-getter's own
// MaxBytes truncates silently).
type limitTransport struct {
	base http.RoundTripper
	max  int64
}

func (t *limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.max {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("artifact is %d bytes, over the size limit %d", resp.ContentLength, t.max)
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.max, max: t.max}
	return resp, nil
}

type limitedBody struct {
	io.ReadCloser
	left, max int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, fmt.Errorf("artifact over the size limit %d bytes", b.max)
	}
	return n, err
}
