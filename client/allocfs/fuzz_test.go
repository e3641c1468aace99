package allocfs

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// FuzzPath checks path resolution against a directory full of links
// that lead outside: a path is refused (ErrInvalid), missing
// (ErrNotFound), or resolves to a file whose real location is inside the
// allocation directory, and what it reads is never the outside's.
func FuzzPath(f *testing.F) {
	for _, seed := range []string{
		"", "/", ".", "..", "../secret", "/../secret", "web/../../secret", "/etc/passwd",
		"up-link", "abs-link", "web/local/etc/passwd", "abs-inside", "loop-a", "rel-inside",
		"web/local/hello.txt", "a\x00b", "//web//local/", "web/local/hello.txt/", "alloc/logs/../../..",
		"rel-inside/..", strings.Repeat("a/", 300),
	} {
		f.Add(seed)
	}
	fsys, dir := allocDir(f)
	escapeLinks(f, dir)
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path string) {
		name, err := cleanPath(path)
		if err != nil {
			if !errors.Is(err, structs.ErrInvalid) {
				t.Fatalf("cleanPath(%q): %v, want ErrInvalid", path, err)
			}
		} else if name != "." && (!filepath.IsLocal(name) || name != filepath.Clean(name)) {
			t.Fatalf("cleanPath(%q) = %q: not a clean local name", path, name)
		}

		_, statErr := fsys.Stat(path)
		checkFuzzErr(t, "Stat", path, statErr)
		if statErr == nil {
			at, err := filepath.EvalSymlinks(filepath.Join(dir, name))
			if err != nil {
				t.Fatalf("Stat(%q) succeeded but %q does not resolve: %v", path, name, err)
			}
			if at != real && !strings.HasPrefix(at, real+string(filepath.Separator)) {
				t.Fatalf("Stat(%q) reached %s, outside %s", path, at, real)
			}
		}
		r, err := fsys.ReadAt(path, 0, 4096)
		checkFuzzErr(t, "ReadAt", path, err)
		if err == nil {
			b, _ := io.ReadAll(r)
			r.Close()
			if strings.Contains(string(b), "outside the allocation") || strings.Contains(string(b), "root:") {
				t.Fatalf("ReadAt(%q) read outside the allocation: %q", path, b)
			}
		}
	})
}

func checkFuzzErr(t *testing.T, op, path string, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, structs.ErrInvalid) && !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("%s(%q): %v, want ErrInvalid or ErrNotFound", op, path, err)
	}
}
