package exec

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// The init runs as root until it starts the command, and the driver's
// binary is dynamically linked: the dynamic loader and the Go runtime
// would read a job's LD_PRELOAD, LD_LIBRARY_PATH, GODEBUG... in the
// init's own environment, and run the job's code as root. So those
// variables are not in the init's environment: they travel, encoded, in
// heldEnv, and the init gives them back to the command only.

// heldEnv carries the task's variables the init must not be started
// with (a JSON list of NAME=VALUE).
const heldEnv = "DROVER_EXEC_HELD_ENV"

// loaderVars are the variables, besides every LD_* and GO*, that glibc
// drops for a privileged program (sysdeps/generic/unsecvars.h).
var loaderVars = []string{
	"GCONV_PATH", "GETCONF_DIR", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH", "MALLOC_ARENA_MAX",
	"MALLOC_ARENA_TEST", "MALLOC_PERTURB_", "MALLOC_TRACE", "MALLOC_TOP_PAD_", "MALLOC_MMAP_THRESHOLD_",
	"MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF",
	"RES_OPTIONS", "TMPDIR", "TZDIR", "GLIBC_TUNABLES",
}

// heldVar reports whether name stays out of the init's environment.
func heldVar(name string) bool {
	return strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "GO") || slices.Contains(loaderVars, name)
}

// holdEnv splits env (NAME=VALUE) into what the init is started with,
// plus heldEnv carrying the rest.
func holdEnv(env []string) ([]string, error) {
	var keep, held []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if heldVar(name) {
			held = append(held, kv)
		} else {
			keep = append(keep, kv)
		}
	}
	if len(held) == 0 {
		return keep, nil
	}
	b, err := json.Marshal(held)
	if err != nil {
		return nil, fmt.Errorf("task env: %w", err)
	}
	return append(keep, heldEnv+"="+string(b)), nil
}

// releaseEnv removes heldEnv from the init's environment and returns
// the variables it carried, for the command.
func releaseEnv() ([]string, error) {
	v, ok := os.LookupEnv(heldEnv)
	os.Unsetenv(heldEnv)
	if !ok {
		return nil, nil
	}
	var held []string
	if err := json.Unmarshal([]byte(v), &held); err != nil {
		return nil, fmt.Errorf("task env: %w", err)
	}
	return held, nil
}
