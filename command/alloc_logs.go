package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// AllocLogsCommand is `drover alloc logs [-stderr] [-f] [-tail] ALLOC [TASK]`.
type AllocLogsCommand struct{ Meta }

func (c *AllocLogsCommand) Synopsis() string { return "Print a task's stdout or stderr" }

func (c *AllocLogsCommand) Help() string {
	return helpText(`
Usage: drover alloc logs [options] <alloc> [<task>]

  Prints the stdout (or with -stderr, the stderr) of a task of the
  allocation with ID <alloc> (or a unique prefix of one). <task> may be left
  out when the allocation's group has one task. Output is written as is,
  to stdout, whichever stream is read.`, `
Logs Options:

  -stderr
    Read the task's stderr instead of its stdout.

  -f
    Follow: keep printing new output until the task is dead or Ctrl-C.

  -tail
    Print only the end of the log: the last -n lines, or the last -c bytes.

  -n=<lines>
    With -tail, the number of lines (default 10).

  -c=<bytes>
    With -tail, the number of bytes; overrides -n.`)
}

// logsOptions are the parsed flags of alloc logs.
type logsOptions struct {
	stderr, follow, tail bool
	lines                int
	bytes                int64
}

func (c *AllocLogsCommand) Run(args []string) int {
	var o logsOptions
	fs := c.flagSet("alloc logs")
	fs.BoolVar(&o.stderr, "stderr", false, "")
	fs.BoolVar(&o.follow, "f", false, "")
	fs.BoolVar(&o.tail, "tail", false, "")
	fs.IntVar(&o.lines, "n", 10, "")
	fs.Int64Var(&o.bytes, "c", 0, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return 1
	}
	if len(args) < 1 || len(args) > 2 {
		return c.usageError("alloc logs", "one or two arguments: <alloc> [<task>]")
	}
	if o.lines < 0 || o.bytes < 0 {
		c.Ui.Error("-n and -c must not be negative")
		return 1
	}
	client, ok := c.clientOrFail()
	if !ok {
		return 1
	}
	ctx, stop := c.context()
	defer stop()
	alloc, _, err := client.Allocations().Info(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading allocation %q: %s", args[0], err))
		return 1
	}
	task := ""
	if len(args) == 2 {
		task = args[1]
	}
	if task, err = pickTask(alloc, task); err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	err = streamLogs(ctx, client.AllocFS(), alloc.ID, task, o, c.stdout())
	switch {
	case ctx.Err() != nil:
		return 0
	case err != nil:
		c.Ui.Error(fmt.Sprintf("Error reading logs of task %q: %s", task, err))
		return 1
	}
	return 0
}

// pickTask returns task if the allocation's group has it, or the group's
// only task when task is "".
func pickTask(a *structs.Allocation, task string) (string, error) {
	names := taskNames(a)
	if task == "" {
		if len(names) == 1 {
			return names[0], nil
		}
		return "", fmt.Errorf("allocation %s has %d tasks (%s): name one", structs.ShortID(a.ID), len(names), strings.Join(names, ", "))
	}
	for _, n := range names {
		if n == task {
			return task, nil
		}
	}
	return "", fmt.Errorf("allocation %s has no task %q; its tasks: %s", structs.ShortID(a.ID), task, strings.Join(names, ", "))
}

// logReader is the part of api.AllocFS that alloc logs uses.
type logReader interface {
	Logs(ctx context.Context, allocID, task, stream string, follow bool, origin string, offset int64) (io.ReadCloser, error)
}

// tailWindow is how far from the end a line-based -tail looks.
const tailWindow = 1 << 20

// streamLogs copies the task's log to out according to o.
func streamLogs(ctx context.Context, fs logReader, allocID, task string, o logsOptions, out io.Writer) error {
	stream := api.LogStdout
	if o.stderr {
		stream = api.LogStderr
	}
	if !o.tail {
		return copyLog(ctx, fs, out, allocID, task, stream, o.follow, api.OriginStart, 0)
	}
	window := int64(tailWindow)
	if o.bytes > 0 {
		window = o.bytes
	}
	if !o.follow {
		var buf bytes.Buffer
		if err := copyLog(ctx, fs, &buf, allocID, task, stream, false, api.OriginEnd, window); err != nil {
			return err
		}
		_, err := out.Write(tailOf(buf.Bytes(), o))
		return err
	}
	// Read what is there, counting it, print its end, then follow from
	// exactly where the read stopped so nothing is lost or repeated.
	tw := &tailWriter{limit: window}
	if err := copyLog(ctx, fs, tw, allocID, task, stream, false, api.OriginStart, 0); err != nil {
		return err
	}
	if _, err := out.Write(tailOf(tw.buf, o)); err != nil {
		return err
	}
	return copyLog(ctx, fs, out, allocID, task, stream, true, api.OriginStart, tw.total)
}

func copyLog(ctx context.Context, fs logReader, out io.Writer, allocID, task, stream string, follow bool, origin string, offset int64) error {
	rc, err := fs.Logs(ctx, allocID, task, stream, follow, origin, offset)
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, err := io.Copy(out, rc); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// tailOf returns the last o.bytes bytes of data, or its last o.lines lines.
func tailOf(data []byte, o logsOptions) []byte {
	if o.bytes > 0 {
		if int64(len(data)) > o.bytes {
			return data[int64(len(data))-o.bytes:]
		}
		return data
	}
	return lastLines(data, o.lines)
}

// lastLines returns the last n lines of data; a final line without a
// newline counts as a line.
func lastLines(data []byte, n int) []byte {
	if n <= 0 {
		return nil
	}
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if data[i] == '\n' {
			n--
			if n == 0 {
				return data[i+1:]
			}
		}
	}
	return data
}

// tailWriter keeps the last limit bytes written and counts all of them.
type tailWriter struct {
	limit int64
	buf   []byte
	total int64
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.total += int64(len(p))
	w.buf = append(w.buf, p...)
	if over := int64(len(w.buf)) - w.limit; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}
