package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/droverhq/drover/drivers"
)

// allocTask is a hello task whose task dir is root/<alloc>/task, as a
// client lays them out under its alloc root.
func allocTask(t *testing.T, image, root, name string, steps ...string) *drivers.TaskConfig {
	t.Helper()
	cfg := helloTask(t, image, steps...)
	cfg.ID += "-" + name
	cfg.AllocID += "-" + name
	cfg.TaskDir = filepath.Join(root, cfg.AllocID, "task")
	if err := os.MkdirAll(cfg.TaskDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestKillOrphans: a client that lost its state kills the containers of
// its own alloc root except those it keeps, removes exited ones, and
// never touches another client's containers on the same engine.
func TestKillOrphans(t *testing.T) {
	t.Parallel()
	image := testImage(t)
	mine, theirs := t.TempDir(), t.TempDir()
	old := New(nil, Config{})
	orphan := allocTask(t, image, mine, "orphan", "ready", "sleep:60s")
	kept := allocTask(t, image, mine, "kept", "ready", "sleep:60s")
	exited := allocTask(t, image, mine, "exited", "exit:0")
	other := allocTask(t, image, theirs, "other", "ready", "sleep:60s")
	handles := map[string]*drivers.TaskHandle{}
	for _, cfg := range []*drivers.TaskConfig{orphan, kept, exited, other} {
		handles[cfg.ID] = start(t, old, cfg)
	}
	for _, cfg := range []*drivers.TaskConfig{orphan, kept, other} {
		waitForFile(t, cfg.StdoutPath, "ready")
	}
	waitExit(t, old, exited.ID)
	for id := range handles {
		old.abandon(id) // the agent dies with its state
	}
	info, _ := inspect(t, old, handles[orphan.ID].State[StateContainerID])
	if got := info.Container.Config.Labels[LabelAllocDir]; got != filepath.Dir(orphan.TaskDir) {
		t.Errorf("label %s = %q, want %q", LabelAllocDir, got, filepath.Dir(orphan.TaskDir))
	}

	d := New(nil, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	killed, err := d.KillOrphans(ctx, mine, map[string]bool{kept.ID: true})
	if err != nil {
		t.Fatalf("KillOrphans: %v", err)
	}
	if !slices.Equal(killed, []string{orphan.ID}) {
		t.Errorf("killed %v, want [%s]", killed, orphan.ID)
	}
	for _, tt := range []struct {
		cfg  *drivers.TaskConfig
		want bool
	}{{orphan, false}, {exited, false}, {kept, true}, {other, true}} {
		if _, found := inspect(t, d, handles[tt.cfg.ID].State[StateContainerID]); found != tt.want {
			t.Errorf("container of %s exists: %v, want %v", tt.cfg.ID, found, tt.want)
		}
	}
	for _, cfg := range []*drivers.TaskConfig{kept, other} {
		_ = old.removeContainer(handles[cfg.ID].State[StateContainerID])
	}
}

// TestTaskLabelCannotClaimAllocDir: a task's own labels cannot set the
// alloc dir label, which decides whose orphan a container is.
func TestTaskLabelCannotClaimAllocDir(t *testing.T) {
	cfg := &drivers.TaskConfig{ID: "x", Config: map[string]any{"image": "i", "labels": map[string]any{LabelAllocDir: "/elsewhere"}}}
	opts, err := CreateOptions(cfg, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := opts.Config.Labels[LabelAllocDir]; ok {
		t.Errorf("label %s = %q from the task, want none without a task dir", LabelAllocDir, v)
	}
	cfg.TaskDir = "/data/alloc/a1/t"
	opts, _ = CreateOptions(cfg, Config{})
	if v := opts.Config.Labels[LabelAllocDir]; v != "/data/alloc/a1" {
		t.Errorf("label %s = %q, want /data/alloc/a1", LabelAllocDir, v)
	}
}

// TestKillTask: KillTask removes the container the handle names, and a
// container already gone is not an error.
func TestKillTask(t *testing.T) {
	t.Parallel()
	image := testImage(t)
	old := New(nil, Config{})
	cfg := helloTask(t, image, "ready", "sleep:60s")
	h := start(t, old, cfg)
	waitForFile(t, cfg.StdoutPath, "ready")
	old.abandon(cfg.ID)
	d := New(nil, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := d.KillTask(ctx, h); err != nil {
		t.Fatalf("KillTask: %v", err)
	}
	if _, found := inspect(t, d, h.State[StateContainerID]); found {
		t.Error("container still there after KillTask")
	}
	if err := d.KillTask(ctx, h); err != nil {
		t.Errorf("KillTask of a removed container: %v", err)
	}
	if err := d.KillTask(ctx, &drivers.TaskHandle{ID: "x"}); !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Errorf("KillTask without a container ID = %v, want ErrInvalidConfig", err)
	}
}
