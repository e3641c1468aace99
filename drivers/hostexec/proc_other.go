//go:build !linux

package hostexec

// ProcStart never reports a process: without /proc there is no start
// time to tell a reused PID apart, so no orphan is killed on its word.
func ProcStart(int) (uint64, bool) { return 0, false }

// BootID is unknown without /proc.
func BootID() string { return "" }
