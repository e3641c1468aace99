package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// An isolated task's filesystem is a root the init builds in its mount
// namespace and pivots into:
//
//	/                 tmpfs, read-only once built
//	/bin /usr /etc …  host dirs from the chroot env, bound read-only;
//	                  /etc/shadow, /etc/gshadow, /etc/sudoers, /etc/ssh …
//	                  masked by an empty file of mode 0 or an empty dir
//	                  (maskedPaths)
//	/dev              tmpfs: null zero full random urandom tty bound from
//	                  the host, the task's GPU nodes, its own devpts, shm
//	/proc             the task's PID namespace
//	/sys              the host's sysfs, read-only
//	/tmp              tmpfs
//	<alloc dir>       the task dir and the shared alloc dir, read-write, at
//	                  their host paths, so DROVER_TASK_DIR and
//	                  DROVER_ALLOC_DIR mean the same inside and out
//
// Nothing else of the host is reachable: not /root, /home, /var, other
// allocations, the agent's data. The driver describes the root
// (rootSpec, JSON in rootEnv); the init builds it (setupRoot) before it
// drops to the task's user.

// rootEnv carries the rootSpec from the driver to the init.
const rootEnv = "DROVER_EXEC_ROOT"

// rootStaging is where the init mounts the new root's tmpfs, in its own
// mount namespace (every task mounts over the same empty dir, unseen by
// the host and by each other).
var rootStaging = filepath.Join(os.TempDir(), "drover-exec-root")

// rootSpec is what the init puts in the task's root.
type rootSpec struct {
	Staging string
	// Dir is the task's working dir, a host path also bound inside.
	Dir string
	// ReadOnly binds host paths (keys) at task paths (values).
	ReadOnly map[string]string
	// ReadWrite binds host paths at the same paths inside.
	ReadWrite []string
	// Devices are host device nodes bound at the same paths inside.
	Devices []string
	// Volumes are the task's host volume mounts (volumes_linux.go).
	Volumes []volumeBind `json:",omitempty"`
}

// maskedPaths are host paths an isolated task never reads, even where
// the chroot env binds a dir holding them: an empty file (or dir) is
// mounted over each.
var maskedPaths = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/sudoers", "/etc/sudoers.d", "/etc/ssh", "/etc/security/opasswd",
	// Agents' own config dirs hold gossip keys, TLS keys and tokens.
	"/etc/drover.d", "/etc/drover", "/etc/nomad.d",
}

// newRootSpec describes the root of a task: the chroot env (nil: the
// default), its read-write dirs and its extra device nodes.
func newRootSpec(env map[string]string, dir string, rw []string, devices []string) (*rootSpec, error) {
	if env == nil {
		env = DefaultChrootEnv()
	}
	if err := ensureStaging(rootStaging); err != nil {
		return nil, err
	}
	spec := &rootSpec{Staging: rootStaging, Dir: dir, ReadOnly: map[string]string{}, Devices: append(append([]string(nil), standardDevices...), devices...)}
	for src, dst := range env {
		if _, err := os.Lstat(src); err == nil {
			spec.ReadOnly[src] = dst
		}
	}
	for _, d := range rw {
		if d == "" {
			continue
		}
		abs, err := filepath.EvalSymlinks(d)
		if err != nil {
			return nil, fmt.Errorf("task root: %w", err)
		}
		spec.ReadWrite = append(spec.ReadWrite, abs)
	}
	return spec, nil
}

// ensureStaging makes the staging dir: a plain dir of root's, not a link
// someone else planted.
func ensureStaging(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("task root staging dir: %w", err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return fmt.Errorf("task root staging dir: %w", err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR || st.Uid != 0 {
		return fmt.Errorf("task root staging dir %s: not a directory of root's", dir)
	}
	return nil
}

func (s *rootSpec) encode() (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}

func decodeRootSpec(v string) (*rootSpec, error) {
	var s rootSpec
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return nil, fmt.Errorf("%s: %w", rootEnv, err)
	}
	return &s, nil
}

// setupRoot builds the root and pivots into it; for the init, as root,
// in new mount and PID namespaces. Mounts are private first, so nothing
// here reaches the host.
func setupRoot(s *rootSpec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	root := s.Staging
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount root tmpfs: %w", err)
	}
	if err := setupDev(root, s.Devices); err != nil {
		return err
	}
	if err := mountAt(root, "/proc", "proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	if err := mountAt(root, "/sys", "sysfs", "sysfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	if err := mountAt(root, "/tmp", "tmpfs", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return err
	}
	// The chroot env after the system mounts, so that it may add to
	// them (a file in /tmp); parents before children.
	srcs := make([]string, 0, len(s.ReadOnly))
	for src := range s.ReadOnly {
		srcs = append(srcs, src)
	}
	sort.Strings(srcs)
	for _, src := range srcs {
		if err := bindInto(root, src, s.ReadOnly[src], true); err != nil {
			return err
		}
	}
	for _, d := range s.ReadWrite {
		if err := bindInto(root, d, d, false); err != nil {
			return err
		}
	}
	if err := bindVolumes(root, s.Volumes); err != nil {
		return err
	}
	if err := maskSecrets(root, s.ReadOnly); err != nil {
		return err
	}
	if err := pivot(root); err != nil {
		return err
	}
	if s.Dir == "" {
		return nil
	}
	if err := unix.Chdir(s.Dir); err != nil {
		return fmt.Errorf("chdir %s: %w", s.Dir, err)
	}
	return nil
}

// bindInto binds host path src at dst inside root (read-only if ro). A
// symlink is copied as a symlink (/bin -> usr/bin on merged-/usr hosts).
func bindInto(root, src, dst string, ro bool) error {
	target := filepath.Join(root, dst)
	fi, err := os.Lstat(src)
	if err != nil {
		return fmt.Errorf("task root: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("task root: %w", err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		link, err := os.Readlink(src)
		if err != nil {
			return fmt.Errorf("task root: %w", err)
		}
		if err := os.Symlink(link, target); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("task root: %w", err)
		}
		return nil
	}
	if err := makeMountPoint(target, fi.IsDir()); err != nil {
		return err
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", src, dst, err)
	}
	// No setuid program and no device node of a bound dir works in the
	// task's root, and a read-only dir is read-only all the way down:
	// mount_setattr sets that on the submounts the bind brought along
	// too (Linux 5.12); older kernels get the top mount only.
	attr := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_NOSUID | unix.MS_NODEV)
	if ro {
		attr |= unix.MOUNT_ATTR_RDONLY
		flags |= unix.MS_RDONLY
	}
	err = unix.MountSetattr(-1, target, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: attr})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		err = unix.Mount("", target, "", flags, "")
	}
	if err != nil {
		return fmt.Errorf("bind %s at %s (nosuid, nodev, read-only %t): %w", src, dst, ro, err)
	}
	return nil
}

// makeMountPoint creates an empty dir or file to mount over; one that
// exists (inside a bound host dir) is used as it is.
func makeMountPoint(path string, dir bool) error {
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	if dir {
		if err := os.Mkdir(path, 0o755); err != nil {
			return fmt.Errorf("task root: %w", err)
		}
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("task root: %w", err)
	}
	return f.Close()
}

func mountAt(root, dst, source, fstype string, flags uintptr, data string) error {
	target := filepath.Join(root, dst)
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("task root: %w", err)
	}
	if err := unix.Mount(source, target, fstype, flags, data); err != nil {
		return fmt.Errorf("mount %s at %s: %w", fstype, dst, err)
	}
	return nil
}

// setupDev makes /dev: a tmpfs with the given host nodes bound in, a
// devpts of the task's own, shm, and the usual links.
func setupDev(root string, nodes []string) error {
	dev := filepath.Join(root, "dev")
	if err := mountAt(root, "/dev", "tmpfs", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755"); err != nil {
		return err
	}
	for _, n := range nodes {
		if _, err := os.Stat(n); err != nil {
			continue // a host without it
		}
		target := filepath.Join(root, n)
		if err := makeMountPoint(target, false); err != nil {
			return err
		}
		if err := unix.Mount(n, target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind device %s: %w", n, err)
		}
	}
	if err := mountAt(root, "/dev/pts", "devpts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return err
	}
	if err := mountAt(root, "/dev/shm", "tmpfs", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777"); err != nil {
		return err
	}
	for name, to := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(to, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("task root: %w", err)
		}
	}
	return nil
}

// maskSecrets mounts an empty file (mode 0: only root may open it) or
// an empty read-only dir over every masked host path that a read-only
// bind brought into the root.
func maskSecrets(root string, ro map[string]string) error {
	// In /dev's tmpfs: an unlinked file would keep the root's tmpfs from
	// going read-only.
	empty := filepath.Join(root, "dev", ".masked")
	if err := os.WriteFile(empty, nil, 0); err != nil {
		return fmt.Errorf("task root: %w", err)
	}
	for src, dst := range ro {
		for _, secret := range maskedPaths {
			rel, err := filepath.Rel(src, secret)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				continue
			}
			target := filepath.Join(root, dst, rel)
			fi, err := os.Lstat(target)
			if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
				continue // absent, or a link, which leads nowhere unmasked
			}
			if fi.IsDir() {
				err = unix.Mount("tmpfs", target, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755")
			} else {
				err = unix.Mount(empty, target, "", unix.MS_BIND|unix.MS_RDONLY, "")
			}
			if err != nil {
				return fmt.Errorf("mask %s: %w", secret, err)
			}
		}
	}
	return nil
}

// pivot makes root the root of the mount namespace, drops the host's
// and makes the root's own tmpfs read-only.
func pivot(root string) error {
	old := filepath.Join(root, ".old-root")
	if err := os.Mkdir(old, 0o700); err != nil {
		return fmt.Errorf("task root: %w", err)
	}
	if err := unix.PivotRoot(root, old); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("chdir /: %w", err)
	}
	if err := unix.Unmount("/.old-root", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	if err := os.Remove("/.old-root"); err != nil {
		return fmt.Errorf("task root: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("remount the task root read-only: %w", err)
	}
	return nil
}
