package drivers

import (
	"fmt"
	"strings"
	"syscall"
)

var signals = map[string]syscall.Signal{
	"SIGABRT": syscall.SIGABRT, "SIGALRM": syscall.SIGALRM, "SIGHUP": syscall.SIGHUP,
	"SIGINT": syscall.SIGINT, "SIGKILL": syscall.SIGKILL, "SIGQUIT": syscall.SIGQUIT,
	"SIGTERM": syscall.SIGTERM, "SIGUSR1": syscall.SIGUSR1, "SIGUSR2": syscall.SIGUSR2,
	"SIGCONT": syscall.SIGCONT, "SIGSTOP": syscall.SIGSTOP, "SIGTSTP": syscall.SIGTSTP,
	"SIGPIPE": syscall.SIGPIPE, "SIGWINCH": syscall.SIGWINCH,
}

// ParseSignal turns a signal name ("SIGTERM", "TERM", "sigint") into a
// signal. The empty name is SIGTERM, the default kill signal.
func ParseSignal(name string) (syscall.Signal, error) {
	if name == "" {
		return syscall.SIGTERM, nil
	}
	n := strings.ToUpper(strings.TrimSpace(name))
	if !strings.HasPrefix(n, "SIG") {
		n = "SIG" + n
	}
	sig, ok := signals[n]
	if !ok {
		return 0, fmt.Errorf("%w: unknown signal %q", ErrInvalidConfig, name)
	}
	return sig, nil
}
