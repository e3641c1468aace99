package allocfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// escapeLinks plants links that lead outside (or nowhere) in dir.
func escapeLinks(t testing.TB, dir string) {
	t.Helper()
	symlink(t, "../../secret", filepath.Join(dir, "up-link"))
	symlink(t, filepath.Join(dir, "..", "..", "secret"), filepath.Join(dir, "abs-link"))
	symlink(t, "/etc", filepath.Join(dir, "web/local/etc"))
	symlink(t, filepath.Join(dir, "web/local/hello.txt"), filepath.Join(dir, "abs-inside"))
	symlink(t, "loop-b", filepath.Join(dir, "loop-a"))
	symlink(t, "loop-a", filepath.Join(dir, "loop-b"))
	symlink(t, "web/local/hello.txt", filepath.Join(dir, "rel-inside"))
}

func TestPathEscapes(t *testing.T) {
	fsys, dir := allocDir(t)
	escapeLinks(t, dir)
	tests := []struct {
		name, path string
		want       error // nil: readable, and it is hello.txt
	}{
		{"parent", "../secret", structs.ErrInvalid},
		{"parent of parent", "../../secret", structs.ErrInvalid},
		{"down then up past the root", "web/../../secret", structs.ErrInvalid},
		{"rooted parent", "/../secret", structs.ErrInvalid},
		{"absolute is inside", "/etc/passwd", structs.ErrNotFound},
		{"absolute inside file", "/web/local/hello.txt", nil},
		{"relative link out", "up-link", structs.ErrInvalid},
		{"absolute link out", "abs-link", structs.ErrInvalid},
		{"link to /etc", "web/local/etc/passwd", structs.ErrInvalid},
		{"absolute link inside", "abs-inside", structs.ErrInvalid},
		{"link loop", "loop-a", structs.ErrInvalid},
		{"NUL", "web/local/hello.txt\x00.png", structs.ErrInvalid},
		{"relative link inside", "rel-inside", nil},
		{"dot segments inside", "./web/./local/../local/hello.txt", nil},
		{"missing", "web/local/nope", structs.ErrNotFound},
		{"under a file", "web/local/hello.txt/x", structs.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fsys.Stat(tt.path)
			checkErr(t, "Stat", tt.path, err, tt.want)
			r, err := fsys.ReadAt(tt.path, 0, 0)
			checkErr(t, "ReadAt", tt.path, err, tt.want)
			if err == nil {
				got, _ := io.ReadAll(r)
				r.Close()
				if string(got) != "hello, world\n" {
					t.Errorf("ReadAt(%q) = %q, want hello.txt's content", tt.path, got)
				}
			}
			err = fsys.Stream(t.Context(), StreamOptions{Path: tt.path}, newCollector().emit)
			checkErr(t, "Stream", tt.path, err, tt.want)
		})
	}
}

func TestListEscapes(t *testing.T) {
	fsys, dir := allocDir(t)
	escapeLinks(t, dir)
	tests := []struct {
		path string
		want error
	}{
		{"..", structs.ErrInvalid},
		{"web/local/etc", structs.ErrInvalid},
		{"loop-a", structs.ErrInvalid},
		{"/etc", structs.ErrNotFound},
		{"a\x00b", structs.ErrInvalid},
		{"web/local/hello.txt", structs.ErrInvalid}, // not a directory
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			_, err := fsys.List(tt.path)
			checkErr(t, "List", tt.path, err, tt.want)
		})
	}
}

func checkErr(t *testing.T, op, path string, got, want error) {
	t.Helper()
	switch {
	case want == nil && got != nil:
		t.Errorf("%s(%q): got %v, want no error", op, path, got)
	case want != nil && !errors.Is(got, want):
		t.Errorf("%s(%q): got %v, want %v", op, path, got, want)
	case want != nil && !strings.Contains(got.Error(), strings.ToValidUTF8(path, "")) && !strings.ContainsRune(path, 0):
		t.Errorf("%s(%q): error %q does not name the path", op, path, got)
	}
}

func TestList(t *testing.T) {
	fsys, dir := allocDir(t)
	write(t, filepath.Join(dir, "alloc/data/model.bin"), "\x00\x01\x02binary")
	symlink(t, "../../web/local/hello.txt", filepath.Join(dir, "alloc/data/hello-link"))
	tests := []struct {
		path string
		want []structs.AllocFileInfo // ModTime not compared
	}{
		{"/", []structs.AllocFileInfo{
			{Name: "alloc", IsDir: true, FileMode: "drwxr-xr-x"},
			{Name: "web", IsDir: true, FileMode: "drwxr-xr-x"},
		}},
		{"alloc", []structs.AllocFileInfo{
			{Name: "data", IsDir: true, FileMode: "drwxr-xr-x"},
			{Name: "logs", IsDir: true, FileMode: "drwxr-xr-x"},
			{Name: "tmp", IsDir: true, FileMode: "drwxr-xr-x"},
		}},
		{"alloc/data/", []structs.AllocFileInfo{
			{Name: "hello-link", Size: int64(len("../../web/local/hello.txt")), FileMode: "Lrwxrwxrwx", ContentType: "application/octet-stream"},
			{Name: "model.bin", Size: 9, FileMode: "-rw-r--r--", ContentType: "application/octet-stream"},
		}},
		{"web/local", []structs.AllocFileInfo{
			{Name: "hello.txt", Size: 13, FileMode: "-rw-r--r--", ContentType: "text/plain; charset=utf-8"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := fsys.List(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("List(%q) has %d entries, want %d: %+v", tt.path, len(got), len(tt.want), got)
			}
			for i, fi := range got {
				want := tt.want[i]
				if want.IsDir {
					want.Size = fi.Size // a directory's size is the file system's
				}
				want.ModTime = fi.ModTime
				if *fi != want {
					t.Errorf("entry %d: got %+v, want %+v", i, *fi, want)
				}
				if fi.ModTime.IsZero() {
					t.Errorf("entry %d: zero ModTime", i)
				}
			}
		})
	}
}

func TestStat(t *testing.T) {
	fsys, dir := allocDir(t)
	symlink(t, "local/hello.txt", filepath.Join(dir, "web/hello-link"))
	tests := []struct {
		path string
		want structs.AllocFileInfo // Size of directories and ModTime not compared
	}{
		{"/", structs.AllocFileInfo{Name: testAllocID, IsDir: true, FileMode: "drwxr-xr-x"}},
		{"", structs.AllocFileInfo{Name: testAllocID, IsDir: true, FileMode: "drwxr-xr-x"}},
		{"alloc/logs", structs.AllocFileInfo{Name: "logs", IsDir: true, FileMode: "drwxr-xr-x"}},
		{"/web/local/hello.txt", structs.AllocFileInfo{Name: "hello.txt", Size: 13, FileMode: "-rw-r--r--", ContentType: "text/plain; charset=utf-8"}},
		{"web/hello-link", structs.AllocFileInfo{Name: "hello-link", Size: 13, FileMode: "-rw-r--r--", ContentType: "text/plain; charset=utf-8"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := fsys.Stat(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.ModTime = got.ModTime
			if want.IsDir {
				want.Size = got.Size
			}
			if *got != want {
				t.Errorf("got %+v, want %+v", *got, want)
			}
		})
	}
}

func TestReadAt(t *testing.T) {
	fsys, dir := allocDir(t)
	const content = "0123456789abcdef"
	write(t, filepath.Join(dir, "alloc/data/f"), content)
	tests := []struct {
		name          string
		path          string
		offset, limit int64
		want          string
		wantErr       error
	}{
		{"whole (limit 0)", "alloc/data/f", 0, 0, content, nil},
		{"whole (limit -1)", "alloc/data/f", 0, -1, content, nil},
		{"middle", "alloc/data/f", 4, 3, "456", nil},
		{"to end", "alloc/data/f", 10, -1, "abcdef", nil},
		{"limit past end", "alloc/data/f", 12, 100, "cdef", nil},
		{"offset at end", "alloc/data/f", 16, 0, "", nil},
		{"offset past end", "alloc/data/f", 100, 5, "", nil},
		{"negative offset", "alloc/data/f", -1, 0, "", structs.ErrInvalid},
		{"directory", "alloc/data", 0, 0, "", structs.ErrInvalid},
		{"root", "/", 0, 0, "", structs.ErrInvalid},
		{"missing", "alloc/data/g", 0, 0, "", structs.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := fsys.ReadAt(tt.path, tt.offset, tt.limit)
			if tt.wantErr != nil {
				checkErr(t, "ReadAt", tt.path, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOpenMissingDir(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "gone"))
	if !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("got %v, want ErrNotFound", err)
	}
}

// TestReadAtDoesNotFollowSwappedLink checks that a file replaced by a link
// to the outside between two reads is refused on the second.
func TestReadAtDoesNotFollowSwappedLink(t *testing.T) {
	fsys, dir := allocDir(t)
	p := filepath.Join(dir, "alloc/data/f")
	write(t, p, "inside")
	if _, err := fsys.ReadAt("alloc/data/f", 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	symlink(t, "/etc/passwd", p)
	_, err := fsys.ReadAt("alloc/data/f", 0, 0)
	checkErr(t, "ReadAt", "alloc/data/f", err, structs.ErrInvalid)
}
