package allocfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/droverhq/drover/structs"
)

// Emit receives the frames of a stream, one at a time, in order. The
// frame is the callee's to keep. An error from Emit ends the stream and
// is returned as is.
type Emit func(*structs.StreamFrame) error

// Origins of a stream's Offset.
const (
	OriginStart = "start"
	OriginEnd   = "end"
)

// StreamOptions say which file to stream and from where.
type StreamOptions struct {
	// Path is the file, relative to the allocation directory.
	Path string
	// Origin is OriginStart (the default when empty) or OriginEnd.
	Origin string
	// Offset counts bytes from Origin; an offset past the other end
	// starts there.
	Offset int64
	// Follow keeps the stream open for data written later, until ctx
	// ends or the file is removed.
	Follow bool
}

// Stream sends the file at opts.Path as frames (Nomad's fs stream). While
// following, a file that shrinks is read again from its start after a
// FileEventTruncated frame, and a file that is removed or replaced ends
// the stream after a FileEventDeleted frame. It returns nil once the
// stream is done, ctx's error when ctx ended first.
func (f *FS) Stream(ctx context.Context, opts StreamOptions, emit Emit) error {
	if err := checkOffset(opts.Origin, opts.Offset); err != nil {
		return fmt.Errorf("stream %q: %w", opts.Path, err)
	}
	file, name, err := f.openFile("stream", opts.Path)
	if err != nil {
		return err
	}
	defer file.Close()
	opened, err := file.Stat()
	if err != nil {
		return pathError("stream", opts.Path, err)
	}
	off := startOffset(opts.Origin, opts.Offset, opened.Size())
	if _, err := file.Seek(off, io.SeekStart); err != nil {
		return pathError("stream", opts.Path, err)
	}
	s := f.newStreamer(emit)
	defer s.stop()
	for {
		if err := s.copy(ctx, file, name, &off); err != nil || !opts.Follow {
			return err
		}
		now, err := f.root.Stat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist) || (err == nil && !os.SameFile(opened, now)):
			if err := s.copy(ctx, file, name, &off); err != nil {
				return err
			}
			return s.send(&structs.StreamFrame{File: name, Offset: off, FileEvent: structs.FileEventDeleted})
		case err != nil:
			return pathError("stream", opts.Path, err)
		case now.Size() < off:
			if _, err := file.Seek(0, io.SeekStart); err != nil {
				return pathError("stream", opts.Path, err)
			}
			off = 0
			if err := s.send(&structs.StreamFrame{File: name, FileEvent: structs.FileEventTruncated}); err != nil {
				return err
			}
			continue
		}
		if err := s.idle(ctx); err != nil {
			return err
		}
	}
}

// checkOffset validates an origin and offset.
func checkOffset(origin string, offset int64) error {
	if origin != "" && origin != OriginStart && origin != OriginEnd {
		return fmt.Errorf("origin %q must be %q or %q: %w", origin, OriginStart, OriginEnd, structs.ErrInvalid)
	}
	if offset < 0 {
		return fmt.Errorf("negative offset %d: %w", offset, structs.ErrInvalid)
	}
	return nil
}

// startOffset places offset, counted from origin, in [0, size].
func startOffset(origin string, offset, size int64) int64 {
	if origin == OriginEnd {
		return max(0, size-offset)
	}
	return min(offset, size)
}

// streamer frames what it reads and paces a follower: it waits one poll
// interval when idle and sends a heartbeat when nothing was sent for a
// heartbeat interval.
type streamer struct {
	emit      Emit
	poll      time.Duration
	heartbeat time.Duration
	buf       []byte
	lastSend  time.Time
	ticker    *time.Ticker // made on the first idle
}

func (f *FS) newStreamer(emit Emit) *streamer {
	s := &streamer{emit: emit, poll: f.PollInterval, heartbeat: f.HeartbeatInterval, lastSend: time.Now()}
	if s.poll <= 0 {
		s.poll = DefaultPollInterval
	}
	if s.heartbeat <= 0 {
		s.heartbeat = DefaultHeartbeatInterval
	}
	return s
}

func (s *streamer) stop() {
	if s.ticker != nil {
		s.ticker.Stop()
	}
}

func (s *streamer) send(fr *structs.StreamFrame) error {
	s.lastSend = time.Now()
	return s.emit(fr)
}

// copy sends what r holds up to its end, in frames of at most
// MaxFrameBytes of the file file; off is r's offset in it, advanced past
// each frame's data. It checks ctx between frames.
func (s *streamer) copy(ctx context.Context, r io.Reader, file string, off *int64) error {
	if s.buf == nil {
		s.buf = make([]byte, MaxFrameBytes)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := r.Read(s.buf)
		if n > 0 {
			*off += int64(n)
			fr := &structs.StreamFrame{File: file, Offset: *off, Data: bytes.Clone(s.buf[:n])}
			if err := s.send(fr); err != nil {
				return err
			}
		}
		if err == io.EOF || (err == nil && n == 0) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", file, err)
		}
	}
}

// idle waits one poll interval, or until ctx ends, and sends a
// heartbeat when the stream has been quiet for a heartbeat interval.
func (s *streamer) idle(ctx context.Context) error {
	if s.ticker == nil {
		s.ticker = time.NewTicker(s.poll)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.ticker.C:
	}
	if time.Since(s.lastSend) >= s.heartbeat {
		return s.send(&structs.StreamFrame{})
	}
	return nil
}
