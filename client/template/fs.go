package template

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// ErrEscapes is a path that leads out of the task directory.
var ErrEscapes = errors.New("escapes the task directory")

// ResolveInside returns the absolute path of rel inside root, after
// checking that neither rel (no absolute path, no ..) nor any symlink
// among the directories on the way leads out of root. The last element
// may not exist yet; when it exists it must not be a symlink.
func ResolveInside(root, rel string) (string, error) {
	if filepath.IsAbs(rel) || strings.ContainsRune(rel, 0) {
		return "", fmt.Errorf("%q: %w", rel, ErrEscapes)
	}
	clean := filepath.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%q: %w", rel, ErrEscapes)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("task directory: %w", err)
	}
	full := filepath.Join(realRoot, clean)
	// Each existing directory on the way must resolve inside root.
	dir := filepath.Dir(full)
	for d := dir; ; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			if !within(realRoot, real) {
				return "", fmt.Errorf("%q: %w (through a symlink)", rel, ErrEscapes)
			}
			break
		}
		if d == realRoot || d == filepath.Dir(d) {
			break
		}
	}
	if fi, err := os.Lstat(full); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return "", fmt.Errorf("%q is a symlink: %w", rel, ErrEscapes)
	}
	return full, nil
}

func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// WriteFile writes data to rel inside root with mode perm, atomically
// (a temporary file renamed over it), creating its directories (0755).
// It reports whether the content changed. The checks of ResolveInside
// give a clear error; the writes themselves go through an os.Root, so
// that a task swapping a directory for a symlink meanwhile cannot move
// them out of root either.
func WriteFile(root, rel string, data []byte, perm os.FileMode) (changed bool, err error) {
	if _, err := ResolveInside(root, rel); err != nil {
		return false, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return false, err
	}
	defer r.Close()
	clean := filepath.Clean(rel)
	if old, err := readRegular(r, clean, int64(len(data))); err == nil && bytes.Equal(old, data) {
		return false, r.Chmod(clean, perm)
	}
	dir := filepath.Dir(clean)
	if err := r.MkdirAll(dir, 0o755); err != nil {
		return false, escapeError(rel, err)
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".tmpl-%d", rand.Uint64()))
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return false, escapeError(rel, err)
	}
	defer func() { _ = r.Remove(tmp) }()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return false, err
	}
	if err := f.Chmod(perm); err != nil {
		_ = f.Close()
		return false, err
	}
	if err := f.Close(); err != nil {
		return false, err
	}
	return true, escapeError(rel, r.Rename(tmp, clean))
}

// readRegular reads name in r, at most limit+1 bytes, when it is a
// regular file; opened non-blocking, so that a FIFO the task left where
// its template goes does not block the client.
func readRegular(r *os.Root, name string, limit int64) ([]byte, error) {
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// escapeError wraps an os.Root error (a path that escapes root fails
// there when a symlink appeared after ResolveInside checked) with rel.
func escapeError(rel string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%q: %w", rel, err)
}

// ReadFile reads rel inside root, at most limit bytes.
func ReadFile(root, rel string, limit int64) ([]byte, error) {
	if _, err := ResolveInside(root, rel); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// O_NONBLOCK: a FIFO the task left there must not block the client.
	f, err := r.OpenFile(filepath.Clean(rel), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, escapeError(rel, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%q is not a regular file", rel)
	}
	buf, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(buf)) > limit {
		err = fmt.Errorf("%q is over %d bytes", rel, limit)
	}
	return buf, err
}

// ParsePerms parses an octal file mode ("0644"; "" is 0644).
func ParsePerms(s string) (os.FileMode, error) {
	if s == "" {
		return 0o644, nil
	}
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o777 {
		return 0, fmt.Errorf("perms %q: want an octal mode such as 0644", s)
	}
	return os.FileMode(n), nil
}

var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseEnv reads KEY=VALUE lines (blank lines and # comments skipped,
// an optional "export ", values optionally in single or double quotes)
// as an env = true template's output is read.
func ParseEnv(data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), DefaultMaxOutput)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !envKey.MatchString(k) {
			return nil, fmt.Errorf("line %d: want KEY=VALUE", n)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"') {
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			}
		} else if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = v[1 : len(v)-1]
		}
		out[k] = v
	}
	return out, sc.Err()
}
