package logrotate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Pump copies what a process writes to a pipe into a log. Processes
// that outlive the task (a daemon it started) may hold the pipe's write
// end open forever, so the owner does not wait for EOF: once the task
// has exited it calls Drain, which copies what is buffered and stops.
type Pump struct {
	r    *os.File
	done chan struct{}
}

// NewPipe returns a pipe whose write end is for the task (pass it as the
// child's stdout or stderr, then close it) and a Pump already copying
// its read end into w. The pump closes the read end when it stops.
func NewPipe(w io.Writer) (*Pump, *os.File, error) {
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	p := &Pump{r: r, done: make(chan struct{})}
	go p.copy(w)
	return p, pw, nil
}

func (p *Pump) copy(w io.Writer) {
	defer close(p.done)
	defer p.r.Close()
	buf := make([]byte, 32*1024)
	for {
		n, err := p.r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				// Keep reading so the writer never blocks on a full pipe.
				continue
			}
		}
		if err != nil {
			return
		}
	}
}

// Drain waits until every writer closed the pipe, or for at most grace:
// what was written before the call is copied (the pipe holds little and
// is read at once), output that keeps coming after grace is dropped.
func (p *Pump) Drain(grace time.Duration) {
	if err := p.r.SetReadDeadline(time.Now().Add(grace)); err != nil && !errors.Is(err, os.ErrClosed) {
		// Not pollable: fall back to waiting for EOF up to grace.
		select {
		case <-p.done:
		case <-time.After(grace):
		}
		return
	}
	<-p.done
}

// Stream is one output stream of a task started by this process: a
// pipe whose write end the task gets, pumped into a rotated log.
type Stream struct {
	log     *Writer // nil: output discarded
	pump    *Pump
	taskEnd *os.File
}

// OpenStream opens the log at base ("" discards the output) and the pipe
// into it. Give TaskEnd to the task, call Started once it runs, and
// Close after it exited.
func OpenStream(base string, opts Options) (*Stream, error) {
	if base == "" {
		f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &Stream{taskEnd: f}, nil
	}
	w, err := Open(base, opts)
	if err != nil {
		return nil, err
	}
	p, pw, err := NewPipe(w)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("log pipe: %w", err)
	}
	return &Stream{log: w, pump: p, taskEnd: pw}, nil
}

// TaskEnd is the file the task writes to.
func (s *Stream) TaskEnd() *os.File { return s.taskEnd }

// Started closes this process's copy of the task's end, so the pump sees
// EOF once the task (and what it started) closes theirs.
func (s *Stream) Started() {
	if s.taskEnd != nil {
		_ = s.taskEnd.Close()
		s.taskEnd = nil
	}
}

// Close copies what is left in the pipe, waiting at most grace for
// processes still holding it (see Pump.Drain), and closes the log.
func (s *Stream) Close(grace time.Duration) error {
	s.Started()
	if s.pump != nil {
		s.pump.Drain(grace)
	}
	if s.log != nil {
		return s.log.Close()
	}
	return nil
}
