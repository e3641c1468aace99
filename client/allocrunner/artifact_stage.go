package allocrunner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Artifacts are fetched into a private staging dir of the client (0700,
// in the allocation dir, beside the task dirs) and
// only then copied into the task dir through an os.Root: go-getter
// writes (and unpacks) with plain paths, and a task dir may hold
// symlinks a previous attempt of the task planted ("local/x" -> "/etc",
// a container's path that the host reads as its own). A file source is
// copied from the allocation dir into the staging dir the same way, so
// that no symlink swapped in after the check leads the read out of it.

var errStagedLink = errors.New("a symlink in a staged artifact")

// stageFileSource copies path (a file or dir inside allocDir) into
// dst through an os.Root at allocDir, at most max bytes in all, and
// returns dst. Symlinks in a copied dir are refused.
func stageFileSource(allocDir, path, dst string, max int64) (string, error) {
	rel, err := filepath.Rel(allocDir, path)
	if err != nil {
		return "", err
	}
	root, err := os.OpenRoot(allocDir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	budget := max
	err = fs.WalkDir(root.FS(), filepath.ToSlash(rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out := filepath.Join(dst, filepath.FromSlash(p[len(filepath.ToSlash(rel)):]))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: %w", p, errStagedLink)
		case d.IsDir():
			return os.MkdirAll(out, 0o700)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		// O_NONBLOCK: a FIFO swapped in meanwhile must not block the open.
		src, err := root.OpenFile(filepath.FromSlash(p), os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return err
		}
		defer src.Close()
		fi, err := src.Stat()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		n, err := copyBounded(out, src, fi.Mode().Perm(), budget)
		budget -= n
		return err
	})
	return dst, err
}

// copyBounded writes src to a new file at path, failing past max bytes.
func copyBounded(path string, src io.Reader, perm fs.FileMode, max int64) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, io.LimitReader(src, max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > max {
		err = fmt.Errorf("artifact over the size limit %d bytes", max)
	}
	return n, err
}

// placeStaged copies the tree under dir into taskDir at the same
// relative paths, through an os.Root at taskDir: no symlink in the task
// dir sends a write out of it. A symlink the task left where a file goes
// is replaced. Symlinks under dir are followed only where they stay
// inside stage, the staging dir (go-getter links a fetched dir).
func placeStaged(stage, dir, taskDir string) error {
	stage, err := filepath.EvalSymlinks(stage)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	root, err := os.OpenRoot(taskDir)
	if err != nil {
		return err
	}
	defer root.Close()
	return placeTree(root, stage, dir, ".")
}

func placeTree(root *os.Root, stage, dir, relBase string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		sub, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel := filepath.Join(relBase, sub)
		if d.Type()&fs.ModeSymlink != 0 {
			real, err := filepath.EvalSymlinks(p)
			if err != nil || !insideDir(stage, real) {
				return fmt.Errorf("%s: %w", rel, errStagedLink)
			}
			if fi, err := os.Stat(real); err == nil && fi.IsDir() {
				return placeTree(root, stage, real, rel)
			}
			return placeFile(root, real, rel)
		}
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			return root.MkdirAll(rel, 0o755)
		}
		return placeFile(root, p, rel)
	})
}

// placeFile copies the regular file src to rel inside root, keeping its
// permission bits.
func placeFile(root *os.Root, src, rel string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", rel)
	}
	if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	// A symlink, FIFO or other special file the task left there goes (an
	// open of a FIFO would block).
	if li, err := root.Lstat(rel); err == nil && !li.Mode().IsRegular() && !li.IsDir() {
		if err := root.Remove(rel); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
	}
	out, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("%s: %w", rel, err)
	}
	if err := out.Chmod(fi.Mode().Perm()); err != nil {
		_ = out.Close()
		return fmt.Errorf("%s: %w", rel, err)
	}
	return out.Close()
}

// insideDir reports whether p is dir or below it.
func insideDir(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}
