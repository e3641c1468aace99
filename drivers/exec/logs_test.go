//go:build linux

package exec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/drivers/logrotate"
)

// The init writes the command's output through the rotating writer:
// 3 MB with 1 MB files and 2 kept leaves the last two files, the newest
// holding the end, in both isolation modes.
func TestOutputRotates(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"isolated", Config{}},
		{"fallback", Config{AllowFallback: true, CgroupRoot: filepath.Join(t.TempDir(), "no-cgroups")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "isolated" {
				requireIsolation(t)
			}
			d := New(nil, tt.cfg)
			cfg := shTask(t, "seq 1 450000; echo done >&2", nil)
			cfg.LogMaxFiles, cfg.LogMaxFileSizeMB = 2, 1
			startTask(t, d, cfg)
			if res := waitResult(t, d, cfg.ID); !res.Successful() {
				t.Fatalf("result = %v", res)
			}
			files, err := logrotate.Files(cfg.StdoutPath)
			if err != nil || len(files) != 2 {
				t.Fatalf("stdout files = %v, %v; want 2", files, err)
			}
			newest, _ := os.ReadFile(files[1])
			if !strings.HasSuffix(string(newest), "\n449999\n450000\n") {
				t.Errorf("newest file ends %q, want the end of the output", newest[max(0, len(newest)-20):])
			}
			for _, f := range files {
				if fi, _ := os.Stat(f); fi.Size() > logrotate.MB {
					t.Errorf("%s holds %d bytes, want at most %d", f, fi.Size(), logrotate.MB)
				}
			}
			if got, _ := os.ReadFile(cfg.StderrPath + ".0"); string(got) != "done\n" {
				t.Errorf("stderr = %q, want %q", got, "done\n")
			}
		})
	}
}
