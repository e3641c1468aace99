package allocrunner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// The task's logs block reaches the driver: 3 MB of output with 1 MB
// files and 2 kept leaves two files, and LogPath names the newest.
func TestLogsBlockRotatesOutput(t *testing.T) {
	task := shTask("t", "seq 1 450000")
	task.LogConfig = &structs.LogConfig{MaxFiles: 2, MaxFileSizeMB: 1}
	alloc := testAlloc(structs.JobTypeBatch, nil, task)
	ar, _ := newRunner(t, alloc)
	if got := runToEnd(t, ar); got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("client status = %q, want complete", got.ClientStatus)
	}
	files, err := ar.LogFiles("t", false)
	if err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(ar.AllocDir(), "alloc", "logs")
	want := []string{filepath.Join(logs, "t.stdout.1"), filepath.Join(logs, "t.stdout.2")}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("LogFiles = %v, want %v", files, want)
	}
	if got, _ := ar.LogPath("t", false); got != want[1] {
		t.Errorf("LogPath = %q, want the newest file %q", got, want[1])
	}
	if b, _ := os.ReadFile(want[1]); !strings.HasSuffix(string(b), "\n450000\n") {
		t.Errorf("newest file does not end the output")
	}
	if _, err := ar.LogFiles("nope", false); err == nil {
		t.Error("LogFiles(nope) succeeded, want an error")
	}
}

func TestLogConfigDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   *structs.LogConfig
		want structs.LogConfig
	}{
		{"unset", nil, structs.LogConfig{MaxFiles: 10, MaxFileSizeMB: 10}},
		{"set", &structs.LogConfig{MaxFiles: 3, MaxFileSizeMB: 5}, structs.LogConfig{MaxFiles: 3, MaxFileSizeMB: 5}},
		{"partly set", &structs.LogConfig{MaxFiles: 2}, structs.LogConfig{MaxFiles: 2, MaxFileSizeMB: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := logConfig(&structs.Task{LogConfig: tt.in}); got != tt.want {
				t.Errorf("logConfig = %+v, want %+v", got, tt.want)
			}
		})
	}
}
