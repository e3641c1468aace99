package hostexec

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcStart returns the start time (clock ticks since boot) of a live,
// non-zombie process, or false. Together with the PID it names one
// process for good: a PID reused later has a different start time.
func ProcStart(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	// Fields after the command: state is the first (field 3), start
	// time the 20th (field 22).
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 || fields[0] == "Z" || fields[0] == "X" {
		return 0, false
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, false
	}
	return start, true
}

// BootID returns the kernel's boot ID ("" when unreadable).
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
