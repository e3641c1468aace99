//go:build linux

package exec

import (
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
