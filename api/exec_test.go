package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api/exectest"
	"github.com/droverhq/drover/structs"
)

// execAgent serves script as the exec websocket and returns a client for
// it (namespace "ml", so the default query parameters can be checked).
func execAgent(t *testing.T, script func(*exectest.Session)) *Client {
	t.Helper()
	srv := httptest.NewServer(exectest.Handler(script))
	t.Cleanup(srv.Close)
	c, err := NewClient(&Config{Address: srv.URL, Namespace: "ml"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExecRoundTrip(t *testing.T) {
	var got exectest.Request
	var stdin []byte
	var sizes []structs.TerminalSize
	c := execAgent(t, func(s *exectest.Session) {
		got = s.Req
		var err error
		if stdin, sizes, err = s.ReadStdin(); err != nil {
			_ = s.Fail("read stdin: " + err.Error())
			return
		}
		_ = s.Stdout("got " + string(stdin))
		_ = s.Stderr("oops\n")
		_ = s.Exit(3)
	})
	resize := make(chan structs.TerminalSize, 1)
	resize <- structs.TerminalSize{Height: 40, Width: 120}
	var stdout, stderr bytes.Buffer
	code, err := c.Allocations().Exec(context.Background(), "a1 b", "main", true, []string{"/bin/sh", "-c", "cat"},
		strings.NewReader("hello\n"), &stdout, &stderr, resize)
	if err != nil || code != 3 {
		t.Fatalf("Exec = %d, %v; want 3, nil", code, err)
	}
	if stdout.String() != "got hello\n" || stderr.String() != "oops\n" {
		t.Errorf("stdout %q, stderr %q; want the input echoed and oops", stdout.String(), stderr.String())
	}
	if got.AllocID != "a1 b" || got.Task != "main" || !got.TTY || strings.Join(got.Command, " ") != "/bin/sh -c cat" {
		t.Errorf("request = %+v; want alloc \"a1 b\", task main, tty, the command", got)
	}
	if ns := got.Query["namespace"]; len(ns) != 1 || ns[0] != "ml" {
		t.Errorf("namespace = %v, want the client's (ml)", ns)
	}
	if len(sizes) != 1 || sizes[0] != (structs.TerminalSize{Height: 40, Width: 120}) {
		t.Errorf("sizes = %v, want the waiting size, sent before stdin's end", sizes)
	}
}

func TestExecNilStdinSendsItsEnd(t *testing.T) {
	c := execAgent(t, func(s *exectest.Session) {
		in, _, err := s.ReadStdin()
		if err != nil || len(in) != 0 {
			_ = s.Fail("stdin not closed")
			return
		}
		_ = s.Exit(0)
	})
	code, err := c.Allocations().Exec(context.Background(), "a1", "", false, []string{"true"}, nil, io.Discard, io.Discard, nil)
	if err != nil || code != 0 {
		t.Errorf("Exec = %d, %v; want 0, nil", code, err)
	}
}

func TestExecErrors(t *testing.T) {
	tests := []struct {
		name    string
		script  func(*exectest.Session)
		command []string
		want    string
	}{
		{"no command", nil, nil, "no command given"},
		{"empty command", nil, []string{""}, "no command given"},
		{"agent error", func(s *exectest.Session) { _ = s.Fail(`task "main" is not running`) }, []string{"ls"}, `task "main" is not running`},
		{"closed before exit", func(s *exectest.Session) { _ = s.Stdout("partial"); _ = s.Close(1000, "") }, []string{"ls"}, "closed the session (code 1000) before the command exited"},
		{"dropped", func(s *exectest.Session) {}, []string{"ls"}, "connection to the agent was lost"},
		{"exited without code", func(s *exectest.Session) { _ = s.Close(1011, "") }, []string{"ls"}, "code 1011"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := execAgent(t, tt.script)
			code, err := c.Allocations().Exec(context.Background(), "a1", "main", false, tt.command, strings.NewReader(""), io.Discard, io.Discard, nil)
			if code != -1 || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Exec = %d, %v; want -1 and an error containing %q", code, err, tt.want)
			}
		})
	}
}

func TestExecRefusedBeforeUpgrade(t *testing.T) {
	f, c := newFakeAgent(t)
	f.handle("GET /v1/client/allocation/nope/exec", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "allocation not found", http.StatusNotFound)
	})
	_, err := c.Allocations().Exec(context.Background(), "nope", "", false, []string{"ls"}, nil, io.Discard, io.Discard, nil)
	if !IsNotFound(err) || !strings.Contains(err.Error(), "allocation not found") {
		t.Errorf("err = %v, want a 404 StatusError with the agent's text", err)
	}
}

func TestExecContextCancelCloses(t *testing.T) {
	ended := make(chan error, 1)
	c := execAgent(t, func(s *exectest.Session) {
		_ = s.Stdout("started\n")
		for {
			if _, err := s.Next(); err != nil {
				ended <- err
				return
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	out := &signalWriter{wrote: make(chan struct{}, 1)}
	go func() {
		<-out.wrote
		cancel()
	}()
	pr, pw := io.Pipe() // a stdin that never ends
	defer pw.Close()
	code, err := c.Allocations().Exec(ctx, "a1", "main", false, []string{"sleep", "1000"}, pr, out, io.Discard, nil)
	if code != -1 || !errors.Is(err, context.Canceled) {
		t.Errorf("Exec = %d, %v; want -1 and context.Canceled", code, err)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Error("the agent's side never saw the connection close")
	}
}

func TestExecStdinReadError(t *testing.T) {
	c := execAgent(t, func(s *exectest.Session) {
		for {
			if _, err := s.Next(); err != nil {
				return
			}
		}
	})
	_, err := c.Allocations().Exec(context.Background(), "a1", "main", false, []string{"cat"},
		io.MultiReader(strings.NewReader("x"), errReader{}), io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "read stdin: disk on fire") {
		t.Errorf("err = %v, want the stdin read error", err)
	}
}

func TestExecResizesWhileRunning(t *testing.T) {
	c := execAgent(t, func(s *exectest.Session) {
		in, err := s.Next()
		if err != nil || in.Size == nil {
			_ = s.Fail("want a size first")
			return
		}
		_ = s.Exit(int(in.Size.Width))
	})
	resize := make(chan structs.TerminalSize)
	go func() { resize <- structs.TerminalSize{Height: 10, Width: 77} }()
	pr, pw := io.Pipe()
	defer pw.Close()
	code, err := c.Allocations().Exec(context.Background(), "a1", "main", true, []string{"sh"}, pr, io.Discard, io.Discard, resize)
	if err != nil || code != 77 {
		t.Errorf("Exec = %d, %v; want the width sent back (77)", code, err)
	}
}

// signalWriter discards output and signals its first write.
type signalWriter struct{ wrote chan struct{} }

func (w *signalWriter) Write(p []byte) (int, error) {
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }
