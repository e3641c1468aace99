package hostexec

import "syscall"

func waitStatus(ws uint32) syscall.WaitStatus { return syscall.WaitStatus(ws) }
