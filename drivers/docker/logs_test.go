package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers/logrotate"
)

// readLog concatenates a rotated log's files, oldest first.
func readLog(t *testing.T, base string) (string, []string) {
	t.Helper()
	files, err := logrotate.Files(base)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range files {
		b.WriteString(readFile(t, f))
	}
	return b.String(), files
}

// Output rotates across files, and a recovered task (re-attached after
// the log rotated) neither loses nor repeats output: the handle's
// offsets count bytes across files.
func TestRecoverRotatedOutput(t *testing.T) {
	t.Parallel()
	image := testImage(t)
	const blocks = 1500 // 1.5 MB
	old := New(nil, Config{})
	cfg := helloTask(t, image, fmt.Sprintf("blocks:%d", blocks), "ready", "sleep:1500ms", "echo:after", "exit:0")
	cfg.StdoutPath = filepath.Join(cfg.TaskDir, "task.stdout")
	cfg.StderrPath = filepath.Join(cfg.TaskDir, "task.stderr")
	cfg.LogMaxFiles, cfg.LogMaxFileSizeMB = 3, 1
	if err := os.WriteFile(cfg.StdoutPath+".0", []byte("earlier\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := start(t, old, cfg)
	waitForLog(t, cfg.StdoutPath, "ready")
	old.abandon(cfg.ID)

	d := New(nil, Config{})
	t.Cleanup(func() { _ = d.Destroy(cfg.ID) })
	if err := d.RecoverTask(h); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	if res := waitExit(t, d, cfg.ID); !res.Successful() {
		t.Fatalf("result = %v", res)
	}
	var want strings.Builder
	want.WriteString("earlier\n")
	for i := 1; i <= blocks; i++ {
		fmt.Fprintf(&want, "block-%06d %s\n", i, strings.Repeat("x", 1024-len("block-000000 \n")))
	}
	want.WriteString("ready\nafter\n")
	got, files := readLog(t, cfg.StdoutPath)
	if len(files) != 2 {
		t.Errorf("stdout files = %v, want 2", files)
	}
	if got != want.String() {
		t.Errorf("stdout holds %d bytes ending %q, want %d bytes ending %q (no output lost or repeated)",
			len(got), got[max(0, len(got)-30):], want.Len(), want.String()[want.Len()-30:])
	}
}

// waitForLog polls until the rotated log at base contains want.
func waitForLog(t *testing.T, base, want string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if got, _ := readLog(t, base); strings.Contains(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	got, _ := readLog(t, base)
	t.Fatalf("log %s never contained %q; it holds %d bytes", base, want, len(got))
}
