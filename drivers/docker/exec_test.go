package docker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
)

// shellTools are the host commands the shell test image carries, with
// the shared libraries they load.
var shellTools = []string{"sh", "cat", "sleep", "stty"}

var (
	shellOnce  sync.Once
	shellRef   string
	shellErr   error
	lddLibPath = regexp.MustCompile(`(?m)(/\S+) \(0x`)
)

// shellImage returns the tag of a FROM scratch image with a shell and
// the tools the exec checks use, copied from this host with their
// libraries (there is no registry to pull one from), built once.
func shellImage(t *testing.T) string {
	t.Helper()
	testImage(t) // skips (or fails in CI) without an engine
	shellOnce.Do(func() { shellRef, shellErr = buildShellImage(New(nil, Config{}).api) })
	if shellErr != nil {
		t.Fatalf("build shell image: %v", shellErr)
	}
	return shellRef
}

func buildShellImage(api *client.Client) (string, error) {
	files := map[string][]byte{}
	for _, tool := range shellTools {
		path, err := exec.LookPath(tool)
		if err != nil {
			return "", err
		}
		if files["bin/"+tool], err = os.ReadFile(path); err != nil {
			return "", err
		}
		out, err := exec.Command("ldd", path).Output()
		if err != nil {
			return "", fmt.Errorf("ldd %s: %w", path, err)
		}
		for _, m := range lddLibPath.FindAllStringSubmatch(string(out), -1) {
			if files[m[1][1:]], err = os.ReadFile(m[1]); err != nil {
				return "", err
			}
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	sum := sha256.New()
	for _, name := range names {
		fmt.Fprintf(sum, "%s %d\n", name, len(files[name]))
		sum.Write(files[name])
	}
	ref := "drover-test/shell:" + hex.EncodeToString(sum.Sum(nil))[:12]
	files["Dockerfile"] = []byte("FROM scratch\nCOPY bin /bin\nCOPY lib /lib\nCOPY lib64 /lib64\nENV PATH=/bin\n")
	return ref, ensureImage(api, ref, files)
}

// shellTask is drivertest's TaskFunc for docker: script run by the
// shell image's /bin/sh.
func shellTask(image string) drivertest.TaskFunc {
	return func(t *testing.T, script string, env map[string]string) *drivers.TaskConfig {
		t.Helper()
		dir := t.TempDir()
		return &drivers.TaskConfig{
			ID:         "dx-" + strings.NewReplacer("/", "-", "#", "-", "=", "-").Replace(t.Name()),
			AllocID:    "alloc-" + fmt.Sprint(time.Now().UnixNano()),
			JobName:    "job",
			TaskName:   "task",
			Env:        env,
			Config:     map[string]any{"image": image, "command": "/bin/sh", "args": []any{"-c", script}},
			TaskDir:    dir,
			StdoutPath: filepath.Join(dir, "task.stdout.0"),
			StderrPath: filepath.Join(dir, "task.stderr.0"),
		}
	}
}

func TestExecConformance(t *testing.T) {
	image := shellImage(t)
	drivertest.RunExec(t, func() drivers.Driver { return New(nil, Config{}) }, drivertest.WithTask(shellTask(image)))
}

// TestExecInContainer: the command runs in the task's container: its
// hostname (UTS namespace), and its PID namespace, where PID 1 is the
// task's command.
func TestExecInContainer(t *testing.T) {
	t.Parallel()
	d := New(nil, Config{})
	cfg := shellTask(shellImage(t))(t, "exec sleep 1000", nil)
	h := start(t, d, cfg)
	info, _ := inspect(t, d, h.State[StateContainerID])
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var out bytes.Buffer
	res, err := d.ExecTask(ctx, cfg.ID, &drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", "cat /proc/sys/kernel/hostname; cat /proc/1/cmdline"},
		Stdout:  &out, Stderr: &out,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("ExecTask = %+v, %v (output %q)", res, err, out.String())
	}
	want := info.Container.Config.Hostname + "\n" + "sleep\x001000\x00"
	if got := out.String(); got != want {
		t.Errorf("exec'd command sees hostname and PID 1 %q, want the container's %q", got, want)
	}
}

// TestProcessTree: what ctx's end kills is the exec's process and every
// process it started, found in /proc.
func TestProcessTree(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & echo $!; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	var child int
	if _, err := fmt.Fscan(stdout, &child); err != nil {
		t.Fatal(err)
	}
	tree := processTree(cmd.Process.Pid)
	sort.Ints(tree)
	want := []int{cmd.Process.Pid, child}
	sort.Ints(want)
	if fmt.Sprint(tree) != fmt.Sprint(want) {
		t.Errorf("processTree(%d) = %v, want %v", cmd.Process.Pid, tree, want)
	}
}
