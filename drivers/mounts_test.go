package drivers

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestLinkMounts: mounts become links under the task dir (an absolute
// destination made relative); linking again is a no-op; a destination
// that escapes or that something else holds is refused.
func TestLinkMounts(t *testing.T) {
	taskDir, host := t.TempDir(), t.TempDir()
	mounts := []*MountConfig{{TaskPath: "/srv/data", HostPath: host}, {TaskPath: "vol", HostPath: host}}
	for range 2 {
		if err := LinkMounts(taskDir, mounts); err != nil {
			t.Fatalf("LinkMounts: %v", err)
		}
	}
	for _, p := range []string{"srv/data", "vol"} {
		if got, err := os.Readlink(filepath.Join(taskDir, p)); err != nil || got != host {
			t.Errorf("%s: link to %q (%v), want %q", p, got, err, host)
		}
	}
	if err := os.WriteFile(filepath.Join(taskDir, "busy"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*MountConfig{{TaskPath: "busy", HostPath: host}, {TaskPath: "../../etc", HostPath: host}} {
		if err := LinkMounts(taskDir, []*MountConfig{m}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("destination %q: got %v, want ErrInvalidConfig", m.TaskPath, err)
		}
	}
}

// TestLinkMountsIgnoresPlantedLinks: a task that replaced a dir on the
// way to its mount with a symlink out of its task dir does not make the
// client create the volume's link out there.
func TestLinkMountsIgnoresPlantedLinks(t *testing.T) {
	taskDir, host, outside := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(taskDir, "srv")); err != nil {
		t.Fatal(err)
	}
	err := LinkMounts(taskDir, []*MountConfig{{TaskPath: "/srv/data", HostPath: host}})
	if _, lerr := os.Lstat(filepath.Join(outside, "data")); lerr == nil {
		t.Fatalf("the link was created out of the task dir (LinkMounts: %v)", err)
	}
	if err == nil {
		t.Error("LinkMounts through an escaping symlink succeeded, want an error")
	}
}
