// Package mpstest provides a stand-in for NVIDIA's MPS control program,
// for tests of code that starts MPS daemons on hosts without a GPU: a
// shell script that records how it is called and behaves like
// nvidia-cuda-mps-control for what client/mps uses (-f stays in the
// foreground until told to quit; "quit" on stdin ends the daemon of the
// pipe directory). It runs nothing on a GPU and is for tests only.
package mpstest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Script is the stand-in. Every call appends one line to $FAKE_MPS_LOG:
// "start gpu=<CUDA_VISIBLE_DEVICES> pipe=<dir> log=<dir>" when the daemon
// starts, "quit gpu=..." for a quit command, "exit gpu=..." when the
// daemon ends.
const Script = `#!/bin/sh
if [ "$1" = "-f" ]; then
  echo "start gpu=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY log=$CUDA_MPS_LOG_DIRECTORY" >> "$FAKE_MPS_LOG"
  echo $$ > "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"
  trap 'kill $! 2>/dev/null; echo "exit gpu=$CUDA_VISIBLE_DEVICES" >> "$FAKE_MPS_LOG"; exit 0' TERM
  while :; do sleep 1 & wait $!; done
fi
read cmd
echo "$cmd gpu=$CUDA_VISIBLE_DEVICES" >> "$FAKE_MPS_LOG"
if [ "$cmd" = quit ]; then kill "$(cat "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid")"; fi
`

// Control writes Script to a temp dir, points FAKE_MPS_LOG (with
// t.Setenv) at a log beside it, and returns the script's path and the
// log.
func Control(t testing.TB) (path string, log *Log) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "fake-mps-control")
	if err := os.WriteFile(path, []byte(Script), 0o755); err != nil {
		t.Fatal(err)
	}
	log = &Log{path: filepath.Join(dir, "calls.log")}
	t.Setenv("FAKE_MPS_LOG", log.path)
	return path, log
}

// Log is the stand-in's record of its calls.
type Log struct{ path string }

// Lines returns the lines so far.
func (l *Log) Lines() []string {
	b, err := os.ReadFile(l.path)
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// Count returns how many lines start with prefix.
func (l *Log) Count(prefix string) int {
	n := 0
	for _, line := range l.Lines() {
		if strings.HasPrefix(line, prefix) {
			n++
		}
	}
	return n
}

// WaitCount polls until Count(prefix) is want, failing t after timeout.
func (l *Log) WaitCount(t testing.TB, prefix string, want int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for l.Count(prefix) != want {
		if time.Now().After(deadline) {
			t.Fatalf("fake MPS calls %q: got %d, want %d; log:\n%s", prefix, l.Count(prefix), want, strings.Join(l.Lines(), "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
