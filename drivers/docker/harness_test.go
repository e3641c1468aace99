package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	"github.com/droverhq/drover/drivers"
)

// waitLimit bounds every wait in these tests.
const waitLimit = 20 * time.Second

var (
	imageOnce sync.Once
	imageRef  string
	imageErr  error
)

// testImage returns the tag of the hello test image, building it once:
// testdata/hello compiled static, in a FROM scratch image tagged
// drover-test/hello:<hash of the binary>. Without a reachable engine the
// test is skipped, or fails when CI=true.
func testImage(t *testing.T) string {
	t.Helper()
	d := New(nil, Config{})
	if info := d.Fingerprint(context.Background()); !info.Healthy {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker engine required in CI: %s", info.HealthDescription)
		}
		t.Skipf("docker engine not reachable, skipping: %s", info.HealthDescription)
	}
	imageOnce.Do(func() { imageRef, imageErr = buildImage(d.api) })
	if imageErr != nil {
		t.Fatalf("build test image: %v", imageErr)
	}
	return imageRef
}

func buildImage(api *client.Client) (string, error) {
	dir, err := os.MkdirTemp("", "drover-hello-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./testdata/hello")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build hello: %v\n%s", err, out)
	}
	binData, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(binData)
	ref := "drover-test/hello:" + hex.EncodeToString(sum[:])[:12]
	files := map[string][]byte{
		"Dockerfile": []byte("FROM scratch\nCOPY hello /hello\nENTRYPOINT [\"/hello\"]\n"),
		"hello":      binData,
	}
	return ref, ensureImage(api, ref, files)
}

// ensureImage builds the image ref from a build context of files (a
// Dockerfile among them) unless the engine already has it.
func ensureImage(api *client.Client, ref string, files map[string][]byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := api.ImageInspect(ctx, ref); err == nil {
		return nil
	}
	buildCtx, err := tarContext(files)
	if err != nil {
		return err
	}
	res, err := api.ImageBuild(ctx, buildCtx, client.ImageBuildOptions{Tags: []string{ref}, Remove: true, ForceRemove: true})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if m.Error != nil {
			return fmt.Errorf("image build %s: %s", ref, m.Error.Message)
		}
	}
}

func tarContext(files map[string][]byte) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	return &buf, tw.Close()
}

// helloTask returns a task running the hello image with steps as its
// arguments, in a fresh task dir.
func helloTask(t *testing.T, image string, steps ...string) *drivers.TaskConfig {
	t.Helper()
	dir := t.TempDir()
	args := make([]any, len(steps))
	for i, s := range steps {
		args[i] = s
	}
	return &drivers.TaskConfig{
		ID:         "dt-" + strings.NewReplacer("/", "-", "#", "-").Replace(t.Name()),
		AllocID:    "alloc-" + fmt.Sprint(time.Now().UnixNano()),
		JobName:    "job",
		TaskName:   "task",
		Config:     map[string]any{"image": image, "args": args},
		TaskDir:    dir,
		StdoutPath: filepath.Join(dir, "task.stdout.0"),
		StderrPath: filepath.Join(dir, "task.stderr.0"),
	}
}

// start starts cfg on d and destroys it when the test ends.
func start(t *testing.T, d *Driver, cfg *drivers.TaskConfig) *drivers.TaskHandle {
	t.Helper()
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if h.ID != cfg.ID || h.State[StateContainerID] == "" {
		t.Fatalf("Start returned handle %+v, want ID %q and a container ID", h, cfg.ID)
	}
	t.Cleanup(func() { _ = d.Destroy(cfg.ID) })
	return h
}

func waitExit(t *testing.T, d *Driver, id string) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ch, err := d.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	res, ok := <-ch
	if !ok || res == nil {
		t.Fatalf("Wait: no result within %v", waitLimit)
	}
	return res
}

func waitForFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(path)
	t.Fatalf("%s never contained %q; got %q", path, want, b)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// inspect returns the container's engine view; found is false when the
// engine has no such container.
func inspect(t *testing.T, d *Driver, id string) (client.ContainerInspectResult, bool) {
	t.Helper()
	res, err := d.api.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return res, false
	}
	if err != nil {
		t.Fatalf("inspect %s: %v", id, err)
	}
	return res, true
}

// abandon makes d forget a task as a killed agent would: its goroutines
// stop, the container is left running.
func (d *Driver) abandon(taskID string) {
	d.mu.Lock()
	t := d.tasks[taskID]
	delete(d.tasks, taskID)
	d.mu.Unlock()
	if t != nil {
		t.shutdown()
	}
}
