package command

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/droverhq/drover/api/exectest"
	"github.com/droverhq/drover/structs"
)

// execAgent is a fake agent with the allocation 1a2b (one task, main)
// whose exec sessions script answers.
func execAgent(t *testing.T, script func(*exectest.Session)) string {
	t.Helper()
	f, addr := newFakeAgent(t)
	f.on("GET /v1/allocation/1a2b", testAllocs()[0])
	f.onHandler("GET /v1/client/allocation/"+allocID1+"/exec", exectest.Handler(script))
	return addr
}

// echoSession answers with what was asked and the input, on stdout, and
// exits with 7.
func echoSession(s *exectest.Session) {
	in, _, err := s.ReadStdin()
	if err != nil {
		_ = s.Fail(err.Error())
		return
	}
	_ = s.Stdout("task=" + s.Req.Task + " tty=" + map[bool]string{true: "yes", false: "no"}[s.Req.TTY] +
		" cmd=" + strings.Join(s.Req.Command, "|") + " in=" + string(in) + "\n")
	_ = s.Stderr("to stderr\n")
	_ = s.Exit(7)
}

func TestAllocExecCommand(t *testing.T) {
	addr := execAgent(t, echoSession)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"command with flags", []string{"1a2b", "/bin/sh", "-c", "echo hi"}, "task=main tty=no cmd=/bin/sh|-c|echo hi in=input\n"},
		{"task and tty", []string{"-task", "main", "-t", "1a2b", "ls", "-l"}, "task=main tty=yes cmd=ls|-l in=input\n"},
		{"no stdin", []string{"-i=false", "1a2b", "cat"}, "task=main tty=no cmd=cat in=\n"},
		{"dash dash dropped", []string{"1a2b", "--", "ls", "--", "x"}, "task=main tty=no cmd=ls|--|x in=input\n"},
		{"help flag of the command", []string{"1a2b", "ls", "-h"}, "task=main tty=no cmd=ls|-h in=input\n"},
		{"flag after alloc is the command's", []string{"1a2b", "-task", "x"}, "task=main tty=no cmd=-task|x in=input\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runIO(t, addr, strings.NewReader("input"), append([]string{"alloc", "exec"}, tt.args...)...)
			if code != 7 || stdout != tt.want || stderr != "to stderr\n" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 7, %q and the command's stderr", code, stdout, stderr, tt.want)
			}
		})
	}
}

func TestAllocExecCommandErrors(t *testing.T) {
	fail := func(s *exectest.Session) { _ = s.Fail(`task "main" is not running`) }
	addr := execAgent(t, fail)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", []string{"1a2b"}, "takes <alloc> and a command"},
		{"nothing", nil, "takes <alloc> and a command"},
		{"bad flag", []string{"-x", "1a2b", "ls"}, "Error parsing arguments"},
		{"unknown alloc", []string{"ffff", "ls"}, `Error reading allocation "ffff"`},
		{"unknown task", []string{"-task", "nope", "1a2b", "ls"}, `no task "nope"`},
		{"session error", []string{"1a2b", "ls"}, `Error running "ls" in task "main" of allocation "1a2b3c4d": task "main" is not running`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runIO(t, addr, strings.NewReader(""), append([]string{"alloc", "exec"}, tt.args...)...)
			if code != 1 || !strings.Contains(stderr, tt.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
				t.Errorf("exit %d, stderr %q; want 1 and a short message containing %q", code, stderr, tt.want)
			}
		})
	}
}

func TestAllocExecNeedsTaskWhenSeveral(t *testing.T) {
	f, addr := newFakeAgent(t)
	alloc := testAllocs()[0]
	alloc.Job.TaskGroups[0].Tasks = append(alloc.Job.TaskGroups[0].Tasks, &structs.Task{Name: "sidecar"})
	f.on("GET /v1/allocation/1a2b", alloc)
	code, _, stderr := runIO(t, addr, strings.NewReader(""), "alloc", "exec", "1a2b", "ls")
	if code != 1 || !strings.Contains(stderr, "has 2 tasks (main, sidecar): name one with -task") {
		t.Errorf("exit %d, stderr %q; want 1 asking for -task", code, stderr)
	}
	if got := f.requests(); slices.ContainsFunc(got, func(r string) bool { return strings.Contains(r, "/exec") }) {
		t.Errorf("requests %v: exec asked without a task", got)
	}
}

func TestAllocExecRefusedBeforeUpgrade(t *testing.T) {
	f, addr := newFakeAgent(t)
	f.on("GET /v1/allocation/1a2b", testAllocs()[0])
	f.onFunc("GET /v1/client/allocation/"+allocID1+"/exec", func(*http.Request) (int, any) {
		return http.StatusBadRequest, "command must be a JSON array of strings"
	})
	code, _, stderr := runIO(t, addr, strings.NewReader(""), "alloc", "exec", "1a2b", "ls")
	if code != 1 || !strings.Contains(stderr, "400 (command must be a JSON array of strings)") {
		t.Errorf("exit %d, stderr %q; want 1 with the agent's answer", code, stderr)
	}
}

func TestGuardExecArgs(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"alloc exec 1a2b ls -h", "alloc exec 1a2b -- ls -h"},
		{"alloc exec -task t -i=false 1a2b ls", "alloc exec -task t -i=false 1a2b -- ls"},
		{"alloc exec 1a2b -- ls", "alloc exec 1a2b -- ls"},
		{"alloc exec -- 1a2b ls", "alloc exec -- 1a2b -- ls"},
		{"alloc exec -h", "alloc exec -h"},
		{"alloc exec -bad 1a2b ls", "alloc exec -bad 1a2b ls"},
		{"alloc exec 1a2b", "alloc exec 1a2b"},
		{"alloc logs 1a2b -h", "alloc logs 1a2b -h"},
	}
	for _, tt := range tests {
		if got := strings.Join(guardExecArgs(strings.Fields(tt.in)), " "); got != tt.want {
			t.Errorf("guardExecArgs(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestOptionalBool(t *testing.T) {
	var b optionalBool
	if b.or(true) != true || b.or(false) != false {
		t.Error("unset flag does not give the default")
	}
	if err := b.Set("false"); err != nil || b.or(true) != false {
		t.Errorf("-t=false: %v, value %v", err, b.or(true))
	}
	if err := b.Set("maybe"); err == nil {
		t.Error("-t=maybe accepted")
	}
}
