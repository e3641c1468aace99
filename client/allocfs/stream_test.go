package allocfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

func TestStreamRead(t *testing.T) {
	fsys, dir := allocDir(t)
	write(t, filepath.Join(dir, "alloc/data/f"), alphabet)
	tests := []struct {
		name string
		opts StreamOptions
		want string
	}{
		{"from start", StreamOptions{}, alphabet},
		{"start offset", StreamOptions{Offset: 30}, alphabet[30:]},
		{"start offset past end", StreamOptions{Offset: 100}, ""},
		{"from end", StreamOptions{Origin: OriginEnd, Offset: 6}, alphabet[30:]},
		{"from end past start", StreamOptions{Origin: OriginEnd, Offset: 100}, alphabet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCollector()
			tt.opts.Path = "/alloc/data/f"
			if err := fsys.Stream(t.Context(), tt.opts, c.emit); err != nil {
				t.Fatal(err)
			}
			if c.data() != tt.want {
				t.Errorf("got %q, want %q", c.data(), tt.want)
			}
			for _, fr := range c.snapshot() {
				if fr.File != "alloc/data/f" || fr.Offset != int64(len(alphabet)) {
					t.Errorf("frame File %q Offset %d, want alloc/data/f %d", fr.File, fr.Offset, len(alphabet))
				}
			}
		})
	}
}

func TestStreamBadInput(t *testing.T) {
	fsys, _ := allocDir(t)
	tests := []struct {
		name string
		opts StreamOptions
		want error
	}{
		{"directory", StreamOptions{Path: "alloc"}, structs.ErrInvalid},
		{"bad origin", StreamOptions{Path: "web/local/hello.txt", Origin: "here"}, structs.ErrInvalid},
		{"negative offset", StreamOptions{Path: "web/local/hello.txt", Offset: -3}, structs.ErrInvalid},
		{"missing", StreamOptions{Path: "web/local/nope", Follow: true}, structs.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fsys.Stream(t.Context(), tt.opts, newCollector().emit)
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// TestStreamFollow follows a file through an append and a truncation,
// and ends with an event when it is removed.
func TestStreamFollow(t *testing.T) {
	fsys, dir := allocDir(t)
	p := filepath.Join(dir, "alloc/data/progress")
	write(t, p, "epoch 1\n")
	c := newCollector()
	done := run(func() error {
		return fsys.Stream(t.Context(), StreamOptions{Path: "alloc/data/progress", Follow: true}, c.emit)
	})
	c.waitFor(t, "the content", c.hasData("epoch 1\n"))
	appendFile(t, p, "epoch 2\n")
	c.waitFor(t, "an append", c.hasData("epoch 1\nepoch 2\n"))
	write(t, p, "e3\n") // truncates, then writes less than was read
	c.waitFor(t, "the rewritten content", c.hasData("epoch 1\nepoch 2\ne3\n"))
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := waitErr(t, done); err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, fr := range c.snapshot() {
		if fr.FileEvent != "" {
			events = append(events, fr.FileEvent)
		}
	}
	want := []string{structs.FileEventTruncated, structs.FileEventDeleted}
	if len(events) != 2 || events[0] != want[0] || events[1] != want[1] {
		t.Errorf("events %q, want %q", events, want)
	}
	last := c.snapshot()[len(c.snapshot())-1]
	if last.File != "alloc/data/progress" || last.Offset != 3 || last.FileEvent != structs.FileEventDeleted {
		t.Errorf("last frame %+v, want the deletion at offset 3", last)
	}
}

func TestStreamCancel(t *testing.T) {
	fsys, _ := allocDir(t)
	fsys.PollInterval = time.Hour
	ctx, cancel := context.WithCancel(t.Context())
	done := run(func() error {
		return fsys.Stream(ctx, StreamOptions{Path: "web/local/hello.txt", Follow: true}, newCollector().emit)
	})
	cancel()
	if err := waitErr(t, done); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func appendFile(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}
