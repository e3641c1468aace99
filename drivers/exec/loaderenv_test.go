//go:build linux

package exec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitNotStartedWithLoaderEnv: the job's LD_* variables reach the
// command but not the init, which runs as root: the dynamic loader of
// the init would otherwise honour them (here LD_DEBUG_OUTPUT: a file
// written as root where the job says).
func TestInitNotStartedWithLoaderEnv(t *testing.T) {
	dbg := t.TempDir() // root's: only a root process can write here
	d := New(nil, Config{})
	cfg := shTask(t, `test "$LD_TEST_MARK" = 1`, nil)
	cfg.Env = map[string]string{"LD_DEBUG": "files", "LD_DEBUG_OUTPUT": filepath.Join(dbg, "ld"), "LD_TEST_MARK": "1"}
	startTask(t, d, cfg)
	if res := waitResult(t, d, cfg.ID); !res.Successful() {
		t.Fatalf("result = %v, want success (the command sees its LD_ variables); stderr %q", res, readFile(t, cfg.StderrPath))
	}
	if files, _ := os.ReadDir(dbg); len(files) > 0 {
		t.Errorf("the loader wrote %s as root: the init was started with the job's LD_DEBUG_OUTPUT", files[0].Name())
	}
}

func TestHoldEnv(t *testing.T) {
	env, err := holdEnv([]string{"A=1", "LD_PRELOAD=/x.so", "GODEBUG=x=1", "GCONV_PATH=/g", "PATH=/bin"})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); heldVar(name) {
			t.Errorf("%s kept in the init's env", kv)
		}
	}
	t.Setenv(heldEnv, env[len(env)-1][len(heldEnv)+1:])
	held, err := releaseEnv()
	if err != nil || len(held) != 3 {
		t.Fatalf("released %v, %v; want the 3 held variables", held, err)
	}
}
