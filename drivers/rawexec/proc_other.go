//go:build !linux

package rawexec

// procStart never reports a process: without /proc there is no start
// time to tell a reused PID apart, so no orphan is killed on its word.
func procStart(int) (uint64, bool) { return 0, false }

// bootID is unknown without /proc.
func bootID() string { return "" }
