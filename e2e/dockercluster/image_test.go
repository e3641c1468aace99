package dockercluster

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// staticLinkFlags link drover statically: go-nvml needs cgo (it dlopens
// libnvidia-ml at run time, which a scratch image lacks, so NVML reports
// no driver and the agents use simulated GPUs).
const staticLinkFlags = "-s -w -linkmode external -extldflags -static"

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// buildBinaries builds a static drover and the sleep task once per test
// binary, into a directory removed by TestMain.
func buildBinaries(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() { binDir, binErr = buildBinariesOnce() })
	if binErr != nil {
		t.Fatalf("build binaries: %v", binErr)
	}
	return binDir
}

func buildBinariesOnce() (string, error) {
	dir, err := os.MkdirTemp("", "drover-e2e-cluster-bin-")
	if err != nil {
		return "", err
	}
	cleanupDirs = append(cleanupDirs, dir)
	builds := []struct {
		out, pkg string
		env      []string
		args     []string
	}{
		{"drover", "../..", []string{"CGO_ENABLED=1", "CGO_CFLAGS=-Wno-deprecated-declarations"}, []string{"-ldflags", staticLinkFlags}},
		{"sleep", "./testdata/sleep", []string{"CGO_ENABLED=0"}, nil},
	}
	for _, b := range builds {
		out := filepath.Join(dir, b.out)
		args := append(append([]string{"build", "-o", out}, b.args...), b.pkg)
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), b.env...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build %s: %v\n%s", b.pkg, err, msg)
		}
		if err := checkStatic(out); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// checkStatic fails for an executable that needs a dynamic loader, which
// a scratch image does not have.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; a FROM scratch image cannot run it", filepath.Base(path))
		}
	}
	return nil
}

// cleanupDirs are removed when the test binary exits.
var cleanupDirs []string

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range cleanupDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// buildImage builds the FROM scratch image tagged ref: /bin/drover (the
// entrypoint), /bin/sleep, and empty /tmp and /data. It carries the label
// drover-e2e=label, like the run's containers and network, for
// scripts/e2e/docker-cleanup.sh.
func buildImage(ctx context.Context, api *client.Client, bins, ref, label string) error {
	files := map[string]string{"drover": "bin/drover", "sleep": "bin/sleep"}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dockerfile := fmt.Sprintf("FROM scratch\nLABEL drover-e2e=%q\nCOPY bin /bin\nCOPY tmp /tmp\nCOPY data /data\nENTRYPOINT [\"/bin/drover\"]\n", label)
	now := time.Now()
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), ModTime: now}); err != nil {
		return err
	}
	if _, err := tw.Write([]byte(dockerfile)); err != nil {
		return err
	}
	for _, dir := range []*tar.Header{
		{Name: "tmp/", Mode: 0o1777, Typeflag: tar.TypeDir, ModTime: now},
		// Searchable: raw_exec tasks run as nobody and need their dirs.
		{Name: "data/", Mode: 0o711, Typeflag: tar.TypeDir, ModTime: now},
	} {
		if err := tw.WriteHeader(dir); err != nil {
			return err
		}
	}
	for src, dst := range files {
		data, err := os.ReadFile(filepath.Join(bins, src))
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: dst, Mode: 0o755, Size: int64(len(data)), ModTime: now}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	res, err := api.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{ref}, Remove: true, ForceRemove: true})
	if err != nil {
		return fmt.Errorf("image build: %w", err)
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("image build output: %w", err)
		}
		if m.Error != nil {
			return fmt.Errorf("image build: %s", m.Error.Message)
		}
	}
}
