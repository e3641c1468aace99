//go:build !linux

package rawexec

import "syscall"

// procStart reports whether pid is alive; without /proc there is no
// start time, so a reused PID is not told apart.
func procStart(pid int) (uint64, bool) {
	return 0, syscall.Kill(pid, 0) == nil
}
