package rawexec

import (
	"os"
	"syscall"
	"testing"

	"github.com/droverhq/drover/drivers/hostexec"
)

// TestKillable: the orphan killer never signals init, the agent itself
// or its process group, nor a PID noted in another boot.
func TestKillable(t *testing.T) {
	other := 1 << 22 // above pid_max's default: no such process
	tests := []struct {
		name string
		pf   pidFile
		want bool
	}{
		{"a task of this boot", pidFile{PID: other, ExecutorPID: other + 1, BootID: hostexec.BootID()}, true},
		{"init", pidFile{PID: 1, ExecutorPID: other}, false},
		{"pid 0", pidFile{PID: 0, ExecutorPID: other}, false},
		{"the agent", pidFile{PID: os.Getpid(), ExecutorPID: other}, false},
		{"the agent as executor", pidFile{PID: other, ExecutorPID: os.Getpid()}, false},
		{"the agent's group", pidFile{PID: syscall.Getpgrp(), ExecutorPID: other}, false},
		{"another boot", pidFile{PID: other, ExecutorPID: other + 1, BootID: "another-boot"}, false},
	}
	for _, tt := range tests {
		if got := killable(tt.pf); got != tt.want {
			t.Errorf("%s: killable = %v, want %v", tt.name, got, tt.want)
		}
	}
}
