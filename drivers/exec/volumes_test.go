//go:build linux

package exec

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/droverhq/drover/drivers"
)

// TestHostVolumeBound: an isolated task sees a host volume at its
// absolute destination (written through) and a read-only one it cannot
// write; a relative destination lies under its task dir.
func TestHostVolumeBound(t *testing.T) {
	requireIsolation(t)
	rw, ro := t.TempDir(), t.TempDir()
	for _, d := range []string{rw, ro} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	d := New(nil, Config{})
	cfg := shTask(t, `echo hi > /srv/data/out && ! touch rel/nope 2>/dev/null && test -d rel`, nil)
	cfg.Mounts = []*drivers.MountConfig{
		{TaskPath: "/srv/data", HostPath: rw},
		{TaskPath: "rel", HostPath: ro, Readonly: true},
	}
	startTask(t, d, cfg)
	if res := waitResult(t, d, cfg.ID); !res.Successful() {
		t.Fatalf("result = %v, want success; stderr %q", res, readFile(t, cfg.StderrPath))
	}
	if b, err := os.ReadFile(filepath.Join(rw, "out")); err != nil || string(b) != "hi\n" {
		t.Errorf("host volume file: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(ro, "nope")); !os.IsNotExist(err) {
		t.Errorf("read-only volume written: %v", err)
	}
}

func TestHostVolumePropagationRefused(t *testing.T) {
	_, err := volumeBinds(t.TempDir(), []*drivers.MountConfig{{TaskPath: "/x", HostPath: t.TempDir(), PropagationMode: "bidirectional"}})
	if err == nil {
		t.Fatal("bidirectional propagation accepted")
	}
}

// TestHostVolumeRefusesPlantedLink: a symlink left in the task dir on
// the way to a relative destination (an earlier attempt's, pointing at
// a host dir) fails the start; nothing is created out there.
func TestHostVolumeRefusesPlantedLink(t *testing.T) {
	requireIsolation(t)
	vol, outside := t.TempDir(), t.TempDir()
	d := New(nil, Config{})
	cfg := shTask(t, `true`, nil)
	if err := os.Symlink(outside, filepath.Join(cfg.TaskDir, "lnk")); err != nil {
		t.Fatal(err)
	}
	cfg.Mounts = []*drivers.MountConfig{{TaskPath: "lnk/sub/vol", HostPath: vol}}
	if _, err := d.Start(context.Background(), cfg); err == nil {
		if res := waitResult(t, d, cfg.ID); res.Successful() {
			t.Error("the task started with its volume through a planted symlink")
		}
	}
	if _, err := os.Lstat(filepath.Join(outside, "sub")); !os.IsNotExist(err) {
		t.Errorf("a dir was created through the symlink: %v", err)
	}
}

func TestCheckNoLinks(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "a", "l")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dst     string
		wantErr bool
	}{
		{"/a/b/c/d", false},
		{"/a/l/x", true},
		{"/a/l", true},
		{"/new/x", false},
	}
	for _, tt := range tests {
		if err := checkNoLinks(root, tt.dst); (err != nil) != tt.wantErr {
			t.Errorf("checkNoLinks(%q) = %v, want error %t", tt.dst, err, tt.wantErr)
		}
	}
}
