package api

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestLogs(t *testing.T) {
	f, c := newFakeAgent(t)
	f.handle("GET /v1/client/fs/logs/a1", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "line 1\nline 2\n")
	})
	rc, err := c.AllocFS().Logs(context.Background(), "a1", "train", LogStderr, true, OriginEnd, 100)
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(got) != "line 1\nline 2\n" {
		t.Errorf("log bytes = %q, %v; want two lines", got, err)
	}
	q := f.last(t).Query
	want := map[string]string{"task": "train", "type": "stderr", "follow": "true", "plain": "true", "origin": "end", "offset": "100"}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("query %s = %q, want %q", k, q.Get(k), v)
		}
	}
}

func TestLogsBadArgs(t *testing.T) {
	_, c := newFakeAgent(t)
	tests := []struct {
		name, stream, origin string
		offset               int64
		want                 string
	}{
		{"stream", "stdin", "", 0, "log stream"},
		{"origin", "stdout", "middle", 0, "log origin"},
		{"offset", "stdout", "start", -1, "log offset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.AllocFS().Logs(context.Background(), "a1", "t", tt.stream, false, tt.origin, tt.offset)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestLogsNotFound(t *testing.T) {
	f, c := newFakeAgent(t)
	f.handle("GET /v1/client/fs/logs/a1", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `task "x" not in allocation`, http.StatusNotFound)
	})
	_, err := c.AllocFS().Logs(context.Background(), "a1", "x", LogStdout, false, "", 0)
	if StatusCode(err) != 404 || !strings.Contains(err.Error(), `task "x"`) {
		t.Errorf("err = %v, want 404 naming the task", err)
	}
}

func TestAllocFSListAndStat(t *testing.T) {
	f, c := newFakeAgent(t)
	f.handleJSON("GET /v1/client/fs/ls/a1", 5, []*structs.AllocFileInfo{{Name: "logs", IsDir: true, FileMode: "drwxr-xr-x"}})
	f.handleJSON("GET /v1/client/fs/stat/a1", 5, &structs.AllocFileInfo{Name: "main.stdout.0", Size: 12, FileMode: "-rw-r--r--"})
	files, err := c.AllocFS().List(context.Background(), "a1", "alloc")
	if err != nil || len(files) != 1 || files[0].Name != "logs" || !files[0].IsDir {
		t.Fatalf("List = %+v, %v; want the logs directory", files, err)
	}
	if got := f.last(t).Query.Get("path"); got != "alloc" {
		t.Errorf("ls path = %q, want alloc", got)
	}
	info, err := c.AllocFS().Stat(context.Background(), "a1", "alloc/logs/main.stdout.0")
	if err != nil || info.Name != "main.stdout.0" || info.Size != 12 {
		t.Fatalf("Stat = %+v, %v; want main.stdout.0 of 12 bytes", info, err)
	}
	if got := f.last(t).Query.Get("path"); got != "alloc/logs/main.stdout.0" {
		t.Errorf("stat path = %q", got)
	}
}

func TestAllocFSCatAndReadAt(t *testing.T) {
	f, c := newFakeAgent(t)
	f.handle("GET /v1/client/fs/cat/a1", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "all of "+r.URL.Query().Get("path"))
	})
	f.handle("GET /v1/client/fs/readat/a1", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		_, _ = io.WriteString(w, q.Get("path")+"@"+q.Get("offset")+"+"+q.Get("limit"))
	})
	read := func(rc io.ReadCloser, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(c.AllocFS().Cat(context.Background(), "a1", "f")); got != "all of f" {
		t.Errorf("Cat = %q", got)
	}
	if got := read(c.AllocFS().ReadAt(context.Background(), "a1", "f", 10, 5)); got != "f@10+5" {
		t.Errorf("ReadAt = %q, want f@10+5", got)
	}
}

func TestAllocFSErrors(t *testing.T) {
	f, c := newFakeAgent(t)
	f.handle("GET /v1/client/fs/cat/a1", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "is a directory", http.StatusBadRequest)
	})
	ctx := context.Background()
	if _, err := c.AllocFS().Cat(ctx, "a1", "alloc"); StatusCode(err) != 400 || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Cat of a directory: %v, want 400 with the agent's text", err)
	}
	if _, err := c.AllocFS().List(ctx, "nope", "/"); !IsNotFound(err) {
		t.Errorf("List of an unknown allocation: %v, want 404", err)
	}
	if _, err := c.AllocFS().ReadAt(ctx, "a1", "f", -1, 0); err == nil || !strings.Contains(err.Error(), "must not be negative") {
		t.Errorf("ReadAt at -1: %v, want a local error", err)
	}
}

func TestAllocSignal(t *testing.T) {
	f, c := newFakeAgent(t)
	f.handleJSON("PUT /v1/client/allocation/a1/signal", 0, struct{}{})
	if err := c.Allocations().Signal(context.Background(), "a1", "main", "SIGHUP"); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	if got := f.last(t).Body; got != `{"Task":"main","Signal":"SIGHUP"}` {
		t.Errorf("body = %s", got)
	}
	if err := c.Allocations().Signal(context.Background(), "a1", "", ""); err == nil {
		t.Error("Signal without a signal: no error")
	}
	if err := c.Allocations().Signal(context.Background(), "zz", "", "SIGHUP"); !IsNotFound(err) {
		t.Errorf("Signal of an unknown allocation: %v, want 404", err)
	}
}
