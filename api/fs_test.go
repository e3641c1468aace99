package api

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
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
