package command

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// fileLogs serves a log from memory the way the agent serves a file:
// origin/offset select where reading starts; a follow read also gets
// what grows is appended after the first read.
type fileLogs struct {
	data  []byte
	grown []byte // appended before a follow read returns
	calls []string
}

func (l *fileLogs) Logs(ctx context.Context, allocID, task, stream string, follow bool, origin string, offset int64) (io.ReadCloser, error) {
	mode := "read"
	if follow {
		mode = "follow"
		l.data = append(l.data, l.grown...)
	}
	l.calls = append(l.calls, mode+" "+origin)
	start := offset
	if origin == "end" {
		start = max(int64(len(l.data))-offset, 0)
	}
	return io.NopCloser(bytes.NewReader(l.data[min(start, int64(len(l.data))):])), nil
}

func TestStreamLogs(t *testing.T) {
	log := "one\ntwo\nthree\nfour\n"
	tests := []struct {
		name      string
		o         logsOptions
		wantOut   string
		wantCalls string
	}{
		{name: "all", o: logsOptions{}, wantOut: log + "five\n", wantCalls: "read start"},
		{name: "follow", o: logsOptions{follow: true}, wantOut: log + "five\n", wantCalls: "follow start"},
		{name: "tail lines", o: logsOptions{tail: true, lines: 2}, wantOut: "three\nfour\n", wantCalls: "read end"},
		{name: "tail bytes", o: logsOptions{tail: true, lines: 10, bytes: 6}, wantOut: "\nfour\n", wantCalls: "read end"},
		{name: "tail follow continues exactly", o: logsOptions{tail: true, follow: true, lines: 1}, wantOut: "four\nfive\n", wantCalls: "read start,follow start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &fileLogs{data: []byte(log), grown: []byte("five\n")}
			if !tt.o.follow {
				l.data = append(l.data, l.grown...)
				if tt.o.tail {
					l.data = []byte(log)
				}
			}
			var out bytes.Buffer
			if err := streamLogs(context.Background(), l, "a", "t", tt.o, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.wantOut {
				t.Errorf("output = %q, want %q", out.String(), tt.wantOut)
			}
			if got := strings.Join(l.calls, ","); got != tt.wantCalls {
				t.Errorf("calls = %s, want %s", got, tt.wantCalls)
			}
		})
	}
}

func TestLastLines(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\n", 5, "a\nb\n"},
		{"", 3, ""},
		{"a\n", 0, ""},
	}
	for _, tt := range tests {
		if got := string(lastLines([]byte(tt.in), tt.n)); got != tt.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestTailWriterKeepsEnd(t *testing.T) {
	w := &tailWriter{limit: 4}
	for _, s := range []string{"abc", "defg", "h"} {
		_, _ = w.Write([]byte(s))
	}
	if string(w.buf) != "efgh" || w.total != 8 {
		t.Errorf("buf %q total %d, want efgh and 8", w.buf, w.total)
	}
}

func TestPickTask(t *testing.T) {
	one := testAllocs()[0]
	two := one.Copy()
	two.Job = testJob()
	two.Job.TaskGroups[0].Tasks = append(two.Job.TaskGroups[0].Tasks, &structs.Task{Name: "sidecar"})
	tests := []struct {
		name    string
		alloc   *structs.Allocation
		task    string
		want    string
		wantErr string
	}{
		{"only task", one, "", "main", ""},
		{"named", two, "sidecar", "sidecar", ""},
		{"ambiguous", two, "", "", "has 2 tasks (main, sidecar)"},
		{"unknown", one, "nope", "", `no task "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pickTask(tt.alloc, tt.task)
			if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("pickTask = %q, %v; want %q, error containing %q", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestAllocLogsCommand(t *testing.T) {
	f, addr := newFakeAgent(t)
	f.on("GET /v1/allocation/1a2b", testAllocs()[0])
	f.onFunc("GET /v1/client/fs/logs/"+allocID1, func(r *http.Request) (int, any) {
		q := r.URL.Query()
		return http.StatusOK, "task=" + q.Get("task") + " type=" + q.Get("type") + " plain=" + q.Get("plain") + "\n"
	})
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"1a2b"}, "task=main type=stdout plain=true\n"},
		{[]string{"--stderr", "1a2b", "main"}, "task=main type=stderr plain=true\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := run(t, addr, append([]string{"alloc", "logs"}, tt.args...)...)
			if code != 0 || stdout != tt.want {
				t.Errorf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, tt.want)
			}
		})
	}
	code, _, stderr := run(t, addr, "alloc", "logs", "1a2b", "nope")
	if code != 1 || !strings.Contains(stderr, `no task "nope"`) {
		t.Errorf("unknown task: exit %d, stderr %q; want 1 naming the task", code, stderr)
	}
}
