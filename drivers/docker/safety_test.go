package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/drivers"
)

// TestHostRootVolume: a task mounting the host's / is refused by a
// driver with the default config, and reads a host file through it when
// the client allows volumes.
func TestHostRootVolume(t *testing.T) {
	image := testImage(t)
	marker := filepath.Join(t.TempDir(), "marker")
	if err := os.WriteFile(marker, []byte("host-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	task := func(t *testing.T) *drivers.TaskConfig {
		cfg := helloTask(t, image, "cat:/host"+marker)
		cfg.Config["volumes"] = []any{"/:/host:ro"}
		return cfg
	}

	t.Run("refused by default", func(t *testing.T) {
		d := New(nil, Config{})
		cfg := task(t)
		_, err := d.Start(context.Background(), cfg)
		if !errors.Is(err, drivers.ErrDisabled) || !strings.Contains(err.Error(), "volumes { enabled = true }") {
			t.Fatalf("Start = %v, want ErrDisabled saying how to enable volumes", err)
		}
		if _, err := d.Wait(context.Background(), cfg.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
			t.Errorf("a refused task is known to the driver: Wait = %v", err)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		d := New(nil, Config{AllowVolumes: true})
		cfg := task(t)
		start(t, d, cfg)
		if res := waitExit(t, d, cfg.ID); !res.Successful() {
			t.Fatalf("result = %v, stderr %q", res, readFile(t, cfg.StderrPath))
		}
		if got := readFile(t, cfg.StdoutPath); got != "host-file\n" {
			t.Errorf("stdout = %q, want the host file's content", got)
		}
	})
}
