package hostexec

import (
	"syscall"
	"unsafe"
)

// pPID is waitid's P_PID id type.
const pPID = 1

// WaitExited blocks until the child pid has exited, without reaping it:
// while it is a zombie its PID, and so its process group ID, cannot be
// reused, so the caller can still signal the group safely. It reports
// false, at once, when it cannot wait (the caller's Wait then does).
func WaitExited(pid int) bool {
	var info [128]byte // siginfo_t; only waitid's side effect matters
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return errno == 0
		}
	}
}
