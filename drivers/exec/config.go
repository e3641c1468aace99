package exec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/droverhq/drover/drivers"
)

// Name is the driver's name in job files.
const Name = "exec"

// DefaultPath is the PATH a task gets when its env sets none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Config configures the driver.
type Config struct {
	// AllowFallback runs tasks without isolation (like raw_exec) when the
	// host cannot isolate them, instead of failing them. Fingerprint and
	// each task handle say that isolation is off.
	AllowFallback bool
	// CgroupRoot is where the cgroup filesystem is mounted; empty means
	// DefaultCgroupRoot. Tests point it elsewhere.
	CgroupRoot string
	// ChrootEnv maps host paths to the paths an isolated task sees them
	// at, read-only; nil is DefaultChrootEnv. Paths missing on the host
	// are left out.
	ChrootEnv map[string]string
}

// DefaultChrootEnv is what an isolated task sees of the host, read-only,
// when Config.ChrootEnv is nil: Nomad's default set. /etc comes without
// its secrets (see maskedPaths).
func DefaultChrootEnv() map[string]string {
	return map[string]string{
		"/bin": "/bin", "/etc": "/etc", "/lib": "/lib", "/lib32": "/lib32", "/lib64": "/lib64",
		"/run/resolvconf": "/run/resolvconf", "/sbin": "/sbin", "/usr": "/usr",
	}
}

// parseConfig reads command and args from the driver config. args may
// arrive as []string (in-process) or []any (decoded from msgpack/JSON).
func parseConfig(cfg map[string]any) (command string, args []string, err error) {
	command, _ = cfg["command"].(string)
	if strings.TrimSpace(command) == "" {
		return "", nil, fmt.Errorf("%w: exec needs a \"command\" string", drivers.ErrInvalidConfig)
	}
	switch v := cfg["args"].(type) {
	case nil:
	case []string:
		args = append(args, v...)
	case []any:
		for i, a := range v {
			s, ok := a.(string)
			if !ok {
				return "", nil, fmt.Errorf("%w: exec args[%d] is %T, want a string", drivers.ErrInvalidConfig, i, a)
			}
			args = append(args, s)
		}
	default:
		return "", nil, fmt.Errorf("%w: exec args is %T, want a list of strings", drivers.ErrInvalidConfig, v)
	}
	return command, args, nil
}

// taskEnv is the task's env with PATH and HOME defaults, as a list.
func taskEnv(cfg *drivers.TaskConfig) []string {
	env := &drivers.TaskConfig{Env: make(map[string]string, len(cfg.Env)+2)}
	for k, v := range cfg.Env {
		env.Env[k] = v
	}
	if env.Env["PATH"] == "" {
		env.Env["PATH"] = DefaultPath
	}
	if env.Env["HOME"] == "" && cfg.TaskDir != "" {
		env.Env["HOME"] = cfg.TaskDir
	}
	return env.EnvList()
}

// resolveCommand finds the executable: names with a "/" are taken as
// given (relative to the task dir), bare names are looked up in the
// task's PATH (not the agent's). It must exist and be executable.
func resolveCommand(command string, env []string, dir string) (string, error) {
	var cands []string
	if strings.Contains(command, "/") {
		cands = []string{command}
	} else {
		for _, p := range filepath.SplitList(pathOf(env)) {
			if p != "" {
				cands = append(cands, filepath.Join(p, command))
			}
		}
	}
	for _, c := range cands {
		if !filepath.IsAbs(c) {
			c = filepath.Join(dir, c)
		}
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	return "", fmt.Errorf("%w: command %q not found or not executable (task PATH %q)", drivers.ErrInvalidConfig, command, pathOf(env))
}

func pathOf(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			return v
		}
	}
	return ""
}
