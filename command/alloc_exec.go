package command

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// AllocExecCommand is `drover alloc exec [-task T] [-i] [-t] ALLOC CMD [ARGS...]`.
type AllocExecCommand struct{ Meta }

func (c *AllocExecCommand) Synopsis() string { return "Run a command in a running task" }

func (c *AllocExecCommand) Help() string {
	return helpText(`
Usage: drover alloc exec [options] <alloc> <command> [<args>...]

  Runs a command in a running task of the allocation with ID <alloc> (or
  a unique prefix of one), in the task's environment and isolation, and
  exits with the command's exit code. Any agent reaches any allocation:
  the servers route the session to the allocation's node.

  Everything after <alloc> is the command and its arguments, flags
  included; options go before <alloc>. A "--" right after <alloc> is
  dropped.

    drover alloc exec -task main 1a2b /bin/sh -c 'echo $HOSTNAME'
    drover alloc exec -i -t 1a2b /bin/bash`, `
Exec Options:

  -task <name>
    The task to run the command in. May be left out when the allocation's
    group has one task.

  -i
    Pass this command's stdin to the command (default true; -i=false
    gives it empty input).

  -t
    Give the command a terminal. The default is true when stdin and
    stdout are both terminals. The local terminal is put in raw mode for
    the session (keys such as Ctrl-C go to the command) and its size is
    passed on as it changes.`)
}

// execOptions are the parsed flags of alloc exec.
type execOptions struct {
	task  string
	stdin bool
	tty   optionalBool
}

// execFlagSet returns alloc exec's flags bound to o.
func (c *AllocExecCommand) execFlagSet(o *execOptions) *flag.FlagSet {
	fs := c.flagSet("alloc exec")
	fs.StringVar(&o.task, "task", "", "")
	fs.BoolVar(&o.stdin, "i", true, "")
	fs.Var(&o.tty, "t", "")
	return fs
}

func (c *AllocExecCommand) Run(args []string) int {
	var o execOptions
	rest, ok := c.parseLeading(c.execFlagSet(&o), args)
	if !ok {
		return exitError
	}
	if len(rest) > 1 && rest[1] == "--" {
		rest = append(rest[:1:1], rest[2:]...)
	}
	if len(rest) < 2 || rest[1] == "" {
		return c.usageError("alloc exec", "<alloc> and a command")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	// Ctrl-C is a key for the command in a terminal session; these end
	// the session from outside, and the terminal is restored first.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer stop()
	alloc, _, err := client.Allocations().Info(ctx, rest[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading allocation %q: %s", rest[0], err))
		return exitError
	}
	task, err := pickTask(alloc, o.task)
	if err != nil {
		c.Ui.Error(err.Error() + " with -task")
		return exitError
	}
	code, err := c.session(ctx, client.Allocations(), alloc.ID, task, rest[1:], o)
	switch {
	case ctx.Err() != nil:
		c.Ui.Error(fmt.Sprintf("Exec in allocation %q ended by a signal", shortID(alloc.ID, false)))
		return exitError
	case err != nil:
		c.Ui.Error(fmt.Sprintf("Error running %q in task %q of allocation %q: %s", rest[1], task, shortID(alloc.ID, false), err))
		return exitError
	}
	return code
}

// execer is the part of api.Allocations that alloc exec uses.
type execer interface {
	Exec(ctx context.Context, allocID, task string, tty bool, command []string,
		stdin io.Reader, stdout, stderr io.Writer, resize <-chan structs.TerminalSize) (int, error)
}

var _ execer = (*api.Allocations)(nil)

// session runs the command, with the local terminal in raw mode and its
// size passed on when o asks for a TTY and there is one; the terminal is
// restored before session returns, however the session ends.
func (c *AllocExecCommand) session(ctx context.Context, ex execer, allocID, task string, command []string, o execOptions) (int, error) {
	stdin, stdout := c.stdin(), c.stdout()
	inFd, inTerm := terminalFd(stdin)
	outFd, outTerm := terminalFd(stdout)
	tty := o.tty.or(inTerm && outTerm)
	var resize chan structs.TerminalSize
	if tty && inTerm {
		restore, err := makeRaw(inFd)
		if err != nil {
			return -1, err
		}
		defer restore()
	}
	if tty && (outTerm || inTerm) {
		fd := outFd
		if !outTerm {
			fd = inFd
		}
		resize = make(chan structs.TerminalSize, 1)
		defer watchSize(fd, resize)()
	}
	if !o.stdin {
		stdin = nil
	}
	return ex.Exec(ctx, allocID, task, tty, command, stdin, stdout, c.stderr(), resize)
}

// optionalBool is a bool flag that knows whether it was given.
type optionalBool struct{ set, value bool }

func (b *optionalBool) String() string {
	if b == nil {
		return "false"
	}
	return strconv.FormatBool(b.value)
}

func (b *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	b.set, b.value = true, v
	return nil
}

func (b *optionalBool) IsBoolFlag() bool { return true }

// or returns the flag's value when it was given, else def.
func (b *optionalBool) or(def bool) bool {
	if b.set {
		return b.value
	}
	return def
}

// guardExecArgs puts a "--" after the allocation of `alloc exec`, unless
// one is there, so that the command's own arguments ("ls -h") are not
// read as the CLI's -help; AllocExecCommand drops it again.
func guardExecArgs(args []string) []string {
	if len(args) < 4 || args[0] != "alloc" || args[1] != "exec" {
		return args
	}
	var c AllocExecCommand
	var o execOptions
	fs := c.execFlagSet(&o)
	if fs.Parse(args[2:]) != nil {
		return args
	}
	rest := fs.Args()
	if len(rest) < 2 || rest[1] == "--" {
		return args
	}
	at := len(args) - len(rest) + 1
	out := append([]string{}, args[:at]...)
	out = append(out, "--")
	return append(out, args[at:]...)
}
