package command

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

var (
	testLogsDir = &structs.AllocFileInfo{Name: "logs", IsDir: true, Size: 4096, FileMode: "drwxrwxrwx", ModTime: testNow}
	testLogFile = &structs.AllocFileInfo{Name: "main.stdout.0", Size: 1536, FileMode: "-rw-r--r--",
		ModTime: testNow.Add(-time.Minute), ContentType: "text/plain; charset=utf-8"}
)

// fsAgent serves allocation 1a2b's directory: alloc/ holds logs/, and
// alloc/logs/main.stdout.0 says hello.
func fsAgent(t *testing.T) (*fakeAgent, string) {
	t.Helper()
	f, addr := newFakeAgent(t)
	f.on("GET /v1/allocation/1a2b", testAllocs()[0])
	byPath := func(r *http.Request, m map[string]any) (int, any) {
		if v, ok := m[r.URL.Query().Get("path")]; ok {
			return http.StatusOK, v
		}
		return http.StatusNotFound, "no such file"
	}
	f.onFunc("GET /v1/client/fs/ls/1a2b", func(r *http.Request) (int, any) {
		return byPath(r, map[string]any{"alloc": []*structs.AllocFileInfo{testLogsDir}, "alloc/logs": []*structs.AllocFileInfo{testLogFile}, "empty": []*structs.AllocFileInfo{}})
	})
	f.onFunc("GET /v1/client/fs/stat/1a2b", func(r *http.Request) (int, any) {
		return byPath(r, map[string]any{"/": testLogsDir, "alloc": testLogsDir, "alloc/logs": testLogsDir, "alloc/logs/main.stdout.0": testLogFile})
	})
	f.onFunc("GET /v1/client/fs/cat/1a2b", func(r *http.Request) (int, any) {
		return byPath(r, map[string]any{"alloc/logs/main.stdout.0": "hello-from-node\n"})
	})
	return f, addr
}

func TestAllocFSCommands(t *testing.T) {
	_, addr := fsAgent(t)
	dirTable := "Mode        Size     Modified Time         Name\n" +
		"drwxrwxrwx  4.0 KiB  2026-03-01T12:00:00Z  logs/\n"
	fileTable := "Mode        Size     Modified Time         Name\n" +
		"-rw-r--r--  1.5 KiB  2026-03-01T11:59:00Z  main.stdout.0\n"
	statTable := "Mode        Size     Modified Time         Content Type               Name\n" +
		"-rw-r--r--  1.5 KiB  2026-03-01T11:59:00Z  text/plain; charset=utf-8  main.stdout.0\n"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"ls", []string{"ls", "1a2b", "alloc"}, dirTable},
		{"ls bytes", []string{"ls", "-H", "1a2b", "alloc/logs"}, "Mode        Size  Modified Time         Name\n-rw-r--r--  1536  2026-03-01T11:59:00Z  main.stdout.0\n"},
		{"ls empty", []string{"ls", "1a2b", "empty"}, ""},
		{"cat", []string{"cat", "1a2b", "alloc/logs/main.stdout.0"}, "hello-from-node\n"},
		{"stat", []string{"stat", "1a2b", "alloc/logs/main.stdout.0"}, statTable},
		{"nomad form lists a directory", []string{"1a2b", "alloc/logs"}, fileTable},
		{"nomad form prints a file", []string{"1a2b", "alloc/logs/main.stdout.0"}, "hello-from-node\n"},
		{"nomad form stat", []string{"-stat", "1a2b", "alloc/logs/main.stdout.0"}, statTable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, addr, append([]string{"alloc", "fs"}, tt.args...)...)
			if code != 0 || stdout != tt.want {
				t.Errorf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, stderr, stdout, tt.want)
			}
		})
	}
}

func TestAllocFSCommandErrors(t *testing.T) {
	_, addr := fsAgent(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"ls without alloc", []string{"ls"}, "takes <alloc> and at most one path"},
		{"cat without path", []string{"cat", "1a2b"}, "takes two arguments: <alloc> <path>"},
		{"stat with three", []string{"stat", "1a2b", "a", "b"}, "takes two arguments"},
		{"nomad form with three", []string{"1a2b", "a", "b"}, "Run 'drover alloc fs -help' for usage."},
		{"ls missing", []string{"ls", "1a2b", "nope"}, `Error listing "nope" of allocation "1a2b": Unexpected response code: 404 (no such file)`},
		{"cat missing", []string{"cat", "1a2b", "nope"}, `Error reading "nope" of allocation "1a2b": Unexpected response code: 404`},
		{"stat missing", []string{"stat", "1a2b", "nope"}, `Error reading "nope" of allocation "1a2b"`},
		{"nomad form missing", []string{"1a2b", "nope"}, `Error reading "nope" of allocation "1a2b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, addr, append([]string{"alloc", "fs"}, tt.args...)...)
			if code != 1 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, tt.want)
			}
		})
	}
}

func TestFormatIBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{12 * 1024, "12 KiB"}, {5 << 20, "5.0 MiB"}, {80 << 30, "80 GiB"},
	}
	for _, tt := range tests {
		if got := formatIBytes(tt.n); got != tt.want {
			t.Errorf("formatIBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
