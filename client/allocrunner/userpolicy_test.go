package allocrunner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

func TestUserPolicyCheck(t *testing.T) {
	tests := []struct {
		name   string
		policy UserPolicy
		driver string
		user   string
		want   string // "" allowed, else part of the error
	}{
		{"default user", UserPolicy{}, "raw_exec", "", ""},
		{"root denied by default", UserPolicy{}, "raw_exec", "root", "user.denylist"},
		{"root by uid", UserPolicy{}, "exec", "0", "user.denylist"},
		{"Administrator", UserPolicy{}, "exec", "Administrator", "user.denylist"},
		{"unchecked driver", UserPolicy{}, "docker", "root", ""},
		{"docker user:group", UserPolicy{CheckedDrivers: []string{"docker"}}, "docker", "0:0", "user.denylist"},
		{"empty denylist", UserPolicy{Denylist: []string{}}, "raw_exec", "root", ""},
		{"nobody denied", UserPolicy{Denylist: []string{"nobody"}}, "raw_exec", "", `user "nobody"`},
		{"allowlist admits", UserPolicy{Allowlist: []string{"nobody"}}, "raw_exec", "nobody", ""},
		{"allowlist refuses", UserPolicy{Allowlist: []string{"nobody"}}, "raw_exec", "daemon", "user.allowlist"},
		{"allowlist leaves the default", UserPolicy{Allowlist: []string{"daemon"}}, "raw_exec", "", ""},
		{"checked drivers", UserPolicy{CheckedDrivers: []string{"exec"}}, "raw_exec", "root", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.check(tt.driver, tt.user)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("check(%q, %q) = %v, want allowed", tt.driver, tt.user, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, drivers.ErrDisabled)):
				t.Errorf("check(%q, %q) = %v, want ErrDisabled containing %q", tt.driver, tt.user, err, tt.want)
			}
		})
	}
}

// TestRootTaskRefused: a raw_exec task asking for root is refused by the
// client's default denylist, with the reason in its events, and is not
// restarted.
func TestRootTaskRefused(t *testing.T) {
	task := shTask("main", "id -u")
	task.User = "root"
	ar, _ := newRunner(t, testAlloc(structs.JobTypeService, nil, task))
	got := runToEnd(t, ar)
	ts := got.TaskStates["main"]
	if ts.State != structs.TaskStateDead || !ts.Failed || ts.Restarts != 0 {
		t.Fatalf("task state = %s, failed %v, restarts %d; want dead, failed, never restarted", ts.State, ts.Failed, ts.Restarts)
	}
	var msg string
	for _, e := range ts.Events {
		if e.Type == structs.TaskDriverFail {
			msg = e.Message
		}
	}
	if !strings.Contains(msg, `user "root" may not run raw_exec tasks`) || !strings.Contains(msg, "user.denylist") {
		t.Errorf("driver failure = %q, want it to name the user and the denylist", msg)
	}
}

// TestTaskRunsAsNobody: with no user set a raw_exec task runs as nobody,
// can write its own dir and the shared data and tmp dirs, and cannot
// read /etc/shadow.
func TestTaskRunsAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching users needs root")
	}
	task := shTask("main", `id -u; touch own "$DROVER_ALLOC_DIR/data/d" "$DROVER_ALLOC_DIR/tmp/t" && echo wrote; cat /etc/shadow >/dev/null 2>&1 || echo no-shadow`)
	ar, _ := newRunner(t, testAlloc(structs.JobTypeBatch, nil, task))
	got := runToEnd(t, ar)
	if ts := got.TaskStates["main"]; ts.Failed {
		t.Fatalf("task failed: %v; stderr %q", eventTypes(ts), readLog(t, ar, "main", true))
	}
	if out, want := readLog(t, ar, "main", false), "65534\nwrote\nno-shadow\n"; out != want {
		t.Errorf("stdout = %q, want %q (stderr %q)", out, want, readLog(t, ar, "main", true))
	}
	st, err := os.Stat(filepath.Join(SharedDir(ar.AllocDir()), "logs"))
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("logs dir = %v (%v), want 0755: the task's user must not write the agent's logs dir", st.Mode(), err)
	}
}
