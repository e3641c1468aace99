//go:build linux

package exec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/drivers/drivertest"
)

// runScript runs script as an isolated task (as user; "" is nobody)
// and returns its stdout.
func runScript(t *testing.T, d *Driver, user, script string) string {
	t.Helper()
	cfg := shTask(t, script, nil)
	cfg.User = user
	cfg.AllocDir = filepath.Join(filepath.Dir(cfg.TaskDir), "alloc")
	if err := os.Mkdir(cfg.AllocDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cfg.AllocDir, 0o777); err != nil {
		t.Fatal(err)
	}
	startTask(t, d, cfg)
	if res := waitResult(t, d, cfg.ID); !res.Successful() {
		t.Fatalf("result = %v, want success; stdout %q, stderr %q", res, readFile(t, cfg.StdoutPath), readFile(t, cfg.StderrPath))
	}
	return readFile(t, cfg.StdoutPath)
}

// TestTaskRoot: an isolated task runs as nobody in a root of its own: the
// system dirs read-only, no host secrets, no other host dirs, its task and
// alloc dirs writable at their host paths.
func TestTaskRoot(t *testing.T) {
	requireIsolation(t)
	if b, err := os.ReadFile("/etc/shadow"); err != nil || len(b) == 0 {
		t.Skipf("the host has no /etc/shadow to hide (%v)", err)
	}
	d := New(nil, Config{})
	tests := []struct {
		name, user, script, want string
	}{
		{"runs as nobody", "", `id -u; id -g`, "65534\n65534\n"},
		{"shadow unreadable", "", `cat /etc/shadow >/dev/null 2>&1 || echo denied`, "denied\n"},
		{"shadow empty even for root", "root", `wc -c </etc/shadow; wc -c </etc/gshadow`, "0\n0\n"},
		{"passwd readable", "", `grep -c '^nobody:' /etc/passwd`, "1\n"},
		{"no other host dirs", "", `for d in /root /home /var /opt /srv; do [ -e $d ] && echo "sees $d"; done; echo done`, "done\n"},
		{"system dirs read-only", "root", `touch /usr/x /etc/x /x 2>/dev/null || echo read-only`, "read-only\n"},
		{"own dirs writable", "", `touch own "$PWD/abs" x && touch "` + "$" + `{ALLOC}/data-file" && echo wrote`, "wrote\n"},
		{"tmp writable", "", `echo hi >/tmp/f && cat /tmp/f`, "hi\n"},
		{"standard devices only", "", `ls /dev | tr '\n' ' '`, "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero "},
		// vda, loop0: block devices the host has; the device filter
		// refuses even root to make a node for one.
		{"no block devices", "root", `mknod disk b 7 0 2>/dev/null || echo refused; mknod n c 1 3 && echo null-ok`, "refused\nnull-ok\n"},
		{"no new privileges", "", `grep NoNewPrivs /proc/self/status | tr -d ' \t'`, "NoNewPrivs:1\n"},
		// Every mount of the task's root that is a host dir (bound) is
		// nosuid and nodev, the task's own dir included.
		{"bound dirs nosuid nodev", "", `awk '$5 == "/usr" || $5 == "'"$PWD"'" { print ($6 ~ /nosuid/ && $6 ~ /nodev/) ? "ok" : "bad " $5 " " $6 }' /proc/self/mountinfo | sort -u`, "ok\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := strings.ReplaceAll(tt.script, "${ALLOC}", `$(dirname "$PWD")/alloc`)
			if got := runScript(t, d, tt.user, script); got != tt.want {
				t.Errorf("stdout = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestChrootEnv: the configured chroot env replaces the default one; a
// host path it names is the only one the task sees, read-only.
func TestChrootEnv(t *testing.T) {
	requireIsolation(t)
	extra := drivertest.ReachableTempDir(t)
	if err := os.WriteFile(filepath.Join(extra, "data"), []byte("visible\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := DefaultChrootEnv()
	env[extra] = "/opt/extra"
	d := New(nil, Config{ChrootEnv: env})
	got := runScript(t, d, "root", `cat /opt/extra/data; touch /opt/extra/x 2>/dev/null || echo read-only`)
	if got != "visible\nread-only\n" {
		t.Errorf("stdout = %q, want the bound file and a read-only mount", got)
	}
}

// TestMPSPipeDir: an MPS slice's pipe dir, named by the client, is
// reachable from the task's root; a dir the job names in its env is not
// bound (a job could name any host dir).
func TestMPSPipeDir(t *testing.T) {
	requireIsolation(t)
	pipe := filepath.Join(drivertest.ReachableTempDir(t), "mps", "pipe")
	if err := os.MkdirAll(pipe, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pipe, "control"), []byte("daemon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := New(nil, Config{})
	cfg := shTask(t, `cat "$CUDA_MPS_PIPE_DIRECTORY/control"`, nil)
	cfg.Env = map[string]string{"CUDA_MPS_PIPE_DIRECTORY": pipe}
	cfg.MPSPipeDir = pipe
	startTask(t, d, cfg)
	if res := waitResult(t, d, cfg.ID); !res.Successful() {
		t.Fatalf("result = %v, stderr %q", res, readFile(t, cfg.StderrPath))
	}
	if got := readFile(t, cfg.StdoutPath); got != "daemon\n" {
		t.Errorf("stdout = %q, want the pipe dir's file", got)
	}

	// The job's own env names the dir: nothing is bound.
	hostile := shTask(t, `cat "$CUDA_MPS_PIPE_DIRECTORY/control" 2>/dev/null || echo unreachable`, nil)
	hostile.ID += "-env"
	hostile.Env = map[string]string{"CUDA_MPS_PIPE_DIRECTORY": pipe}
	startTask(t, d, hostile)
	waitResult(t, d, hostile.ID)
	if got := readFile(t, hostile.StdoutPath); got != "unreachable\n" {
		t.Errorf("a pipe dir named only in the job's env: stdout = %q, want it unreachable", got)
	}
}
