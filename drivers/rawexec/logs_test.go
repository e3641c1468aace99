package rawexec

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/drivers/logrotate"
)

// A task writing 3 MB with 1 MB files and 2 kept leaves the last two
// files, each at most 1 MB, the newest holding the end of the output.
func TestOutputRotates(t *testing.T) {
	dir := drivertest.ReachableTempDir(t)
	const lines = 450000 // `seq` prints about 3 MB
	d := newDriver()
	cfg := &drivers.TaskConfig{
		ID:               "rotate",
		Config:           map[string]any{"command": "seq", "args": []any{"1", strconv.Itoa(lines)}},
		TaskDir:          dir,
		StdoutPath:       filepath.Join(dir, "task.stdout"),
		StderrPath:       filepath.Join(dir, "task.stderr"),
		LogMaxFiles:      2,
		LogMaxFileSizeMB: 1,
	}
	if _, err := d.Start(context.Background(), cfg); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer d.Destroy(cfg.ID)
	ch, err := d.Wait(context.Background(), cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res := <-ch; !res.Successful() {
		t.Fatalf("result = %v", res)
	}
	var want strings.Builder
	for i := 1; i <= lines; i++ {
		want.WriteString(strconv.Itoa(i) + "\n")
	}
	files, err := logrotate.Files(cfg.StdoutPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("stdout files = %v, want 2", files)
	}
	var got strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > logrotate.MB {
			t.Errorf("%s holds %d bytes, want at most %d", f, len(b), logrotate.MB)
		}
		got.Write(b)
	}
	total := want.Len()
	if _, idx, _ := logrotate.Split(files[1]); idx != total/logrotate.MB {
		t.Errorf("newest file %s, want index %d", files[1], total/logrotate.MB)
	}
	if !strings.HasSuffix(want.String(), got.String()) || got.Len() < logrotate.MB {
		t.Errorf("kept %d bytes ending %q: not the tail of the output", got.Len(), got.String()[max(0, got.Len()-20):])
	}
	if errs, _ := logrotate.Files(cfg.StderrPath); len(errs) != 1 {
		t.Errorf("stderr files = %v, want one (empty) file", errs)
	}
}
