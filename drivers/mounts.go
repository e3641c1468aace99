package drivers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MountConfig is a host path the client mounts into a task: a group's
// host volume named by one of the task's volume_mount blocks. The client
// has checked that the volume is offered on this node and writable when
// the mount is.
type MountConfig struct {
	// TaskPath is the mount's destination as the job wrote it: absolute
	// in the task's root (drivers that give the task a root of its own),
	// or relative to its task dir.
	TaskPath string
	// HostPath is the host volume's path on the node.
	HostPath string
	Readonly bool
	// PropagationMode is private, host-to-task or bidirectional.
	PropagationMode string
}

// TaskDirPath is where the mount lies under the task dir for a driver
// without a root of its own: TaskPath, made relative (a leading "/"
// dropped), below taskDir. Destinations with ".." were refused when the
// job was validated; checked again here.
func (m *MountConfig) TaskDirPath(taskDir string) (string, error) {
	rel := strings.TrimLeft(filepath.Clean("/"+m.TaskPath), "/")
	if rel == "" || slices.Contains(strings.Split(filepath.ToSlash(m.TaskPath), "/"), "..") {
		return "", fmt.Errorf("%w: volume_mount destination %q", ErrInvalidConfig, m.TaskPath)
	}
	return filepath.Join(taskDir, rel), nil
}

// LinkMounts makes each mount a symlink in the task dir pointing at its
// host path, for drivers without isolation (raw_exec): the task reaches
// the volume at <task dir>/<destination>. Read-only is not enforced (a
// raw_exec task can reach any host path its user may). The links are
// made through an os.Root at the task dir: the task (another user than
// the client) may have left symlinks there, which must not make the
// client create a link elsewhere on the host.
func LinkMounts(taskDir string, mounts []*MountConfig) error {
	root, err := os.OpenRoot(taskDir)
	if err != nil {
		return fmt.Errorf("volume_mount: %w", err)
	}
	defer root.Close()
	for _, m := range mounts {
		if m == nil {
			continue
		}
		if err := linkMount(root, taskDir, m); err != nil {
			return err
		}
	}
	return nil
}

func linkMount(root *os.Root, taskDir string, m *MountConfig) error {
	link, err := m.TaskDirPath(taskDir)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(taskDir, link)
	if err != nil {
		return fmt.Errorf("volume_mount %s: %w", m.TaskPath, err)
	}
	if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return fmt.Errorf("volume_mount %s: %w", m.TaskPath, err)
	}
	if cur, err := root.Readlink(rel); err == nil && cur == m.HostPath {
		return nil // a restart: already there
	}
	if err := root.Symlink(m.HostPath, rel); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: volume_mount destination %q: the task dir already holds something there", ErrInvalidConfig, m.TaskPath)
		}
		return fmt.Errorf("volume_mount %s: %w", m.TaskPath, err)
	}
	return nil
}
