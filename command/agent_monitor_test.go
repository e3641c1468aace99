package command

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/cli"
)

// lockedBuffer is a strings.Builder safe for a command's writes and a
// test's reads at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMonitorCommand: `drover monitor -log-level trace -json` on a real
// agent (which itself logs at WARN) prints the trace line of a request
// made while it runs, as hclog's JSON, and exits 0 when stopped.
func TestMonitorCommand(t *testing.T) {
	addr := startDevAgent(t)
	t.Setenv("DROVER_ADDR", addr)
	out := &lockedBuffer{}
	ui := cli.NewMockUi()
	stop := make(chan struct{})
	done := make(chan int, 1)
	go func() {
		done <- Run([]string{"monitor", "-log-level", "trace", "-json"}, Meta{Ui: ui, Stdout: out, ShutdownCh: stop})
	}()
	c := apiClient(t, addr)
	eventually(t, 15*time.Second, "the monitor prints a request made after it started", func() bool {
		_, _, _ = c.Nodes().List(context.Background(), nil)
		return strings.Contains(out.String(), `"path":"/v1/nodes"`)
	})
	close(stop)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("monitor exited %d: %s", code, ui.ErrorWriter.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("monitor did not stop in 15s")
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["@message"] == nil {
			t.Errorf("line %q is not hclog's JSON: %v", line, err)
		}
	}
}

// TestMonitorCommandErrors: a bad level and another agent are refused
// with the agent's reason and exit 1.
func TestMonitorCommandErrors(t *testing.T) {
	addr := startDevAgent(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"monitor", "-log-level", "loud"}, `log_level "loud"`},
		{[]string{"monitor", "-node-id", "0b1a2c3d-0000-0000-0000-000000000000"}, "only this agent's own log"},
		{[]string{"monitor", "extra"}, "no arguments"},
	} {
		code, _, stderr := run(t, addr, tt.args...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 with %q", tt.args, code, stderr, tt.want)
		}
	}
}
