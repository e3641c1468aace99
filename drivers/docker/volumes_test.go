package docker

import (
	"errors"
	"testing"

	"github.com/moby/moby/api/types/mount"

	"github.com/droverhq/drover/drivers"
)

// TestHostVolumeMounts: a task's host volume mounts become bind mounts
// at their destinations, read-only and propagation as asked, without
// the client's "volumes" switch (the operator offered them); a relative
// destination is refused.
func TestHostVolumeMounts(t *testing.T) {
	cfg := specTask(map[string]any{"image": "i"})
	cfg.Mounts = []*drivers.MountConfig{
		{TaskPath: "/data", HostPath: "/srv/data"},
		{TaskPath: "/ro/", HostPath: "/srv/ro", Readonly: true, PropagationMode: "host-to-task"},
	}
	opts, err := CreateOptions(cfg, Config{})
	if err != nil {
		t.Fatalf("CreateOptions: %v", err)
	}
	want := []mount.Mount{
		{Type: mount.TypeBind, Source: "/srv/data", Target: "/data", BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}},
		{Type: mount.TypeBind, Source: "/srv/ro", Target: "/ro", ReadOnly: true, BindOptions: &mount.BindOptions{Propagation: mount.PropagationRSlave}},
	}
	got := opts.HostConfig.Mounts
	if len(got) != len(want) {
		t.Fatalf("mounts: got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Type != want[i].Type || got[i].Source != want[i].Source || got[i].Target != want[i].Target ||
			got[i].ReadOnly != want[i].ReadOnly || got[i].BindOptions.Propagation != want[i].BindOptions.Propagation {
			t.Errorf("mount %d: got %+v, want %+v", i, got[i], want[i])
		}
	}

	cfg.Mounts = []*drivers.MountConfig{{TaskPath: "data", HostPath: "/srv/data"}}
	if _, err := CreateOptions(cfg, Config{}); !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Errorf("relative destination: got %v, want ErrInvalidConfig", err)
	}
}
