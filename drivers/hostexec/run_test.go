package hostexec

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
)

func shCmd(script string) *exec.Cmd {
	return &exec.Cmd{Path: "/bin/sh", Args: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}}
}

// TestRunOutputHolderEscapes: a process that left the command's process
// group (setsid) and holds its stdout past the command's exit neither
// survives as a reason to wait nor delays the result past DrainGrace.
func TestRunOutputHolderEscapes(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(map[bool]string{false: "pipes", true: "tty"}[tty], func(t *testing.T) {
			var out bytes.Buffer
			begin := time.Now()
			res, err := Run(context.Background(), shCmd("setsid sleep 3 & sleep 0.3; echo done"), &drivers.ExecOptions{TTY: tty, Stdout: &out}, nil)
			took := time.Since(begin)
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("Run = %+v, %v, want exit code 0", res, err)
			}
			if !strings.Contains(out.String(), "done") {
				t.Errorf("stdout = %q, want it to contain %q", out.String(), "done")
			}
			if took > DrainGrace+2*time.Second {
				t.Errorf("Run took %v; the escaped holder of stdout should cost at most DrainGrace (%v)", took, DrainGrace)
			}
		})
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cmd := shCmd("echo never")
	if _, err := Run(ctx, cmd, &drivers.ExecOptions{}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled ctx: %v, want context.Canceled", err)
	}
	if cmd.Process != nil {
		t.Error("Run started the command with a cancelled ctx")
	}
}

func TestRunTaskDone(t *testing.T) {
	done := make(chan struct{})
	close(done)
	_, err := Run(context.Background(), shCmd("sleep 1000"), &drivers.ExecOptions{}, done)
	if !errors.Is(err, drivers.ErrTaskNotRunning) {
		t.Errorf("Run once the task ended: %v, want ErrTaskNotRunning", err)
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		ws   uint32 // wait status as the kernel encodes it
		want int
	}{
		{"exit 0", 0, 0},
		{"exit 3", 3 << 8, 3},
		{"SIGKILL", 9, 137},
		{"SIGTERM", 15, 143},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(waitStatus(tt.ws)); got != tt.want {
				t.Errorf("ExitCode(%#x) = %d, want %d", tt.ws, got, tt.want)
			}
		})
	}
}
