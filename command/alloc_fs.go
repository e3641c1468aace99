package command

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// The alloc fs commands read an allocation's directory on whatever node
// it is: `alloc fs ls`, `alloc fs cat`, `alloc fs stat`, and Nomad's
// `alloc fs [-stat] ALLOC [PATH]`, which lists a directory or prints a
// file.

const fsPathHelp = `

  Paths are relative to the allocation's directory: "alloc/logs" holds
  the tasks' logs, "<task>" a task's working directory. Any agent
  reaches any allocation: the servers route the request to its node.`

const fsHumanHelp = `
  -H
    Print sizes in bytes instead of KiB, MiB and GiB.`

// AllocFSCommand is `drover alloc fs [-stat] [-H] ALLOC [PATH]`.
type AllocFSCommand struct{ Meta }

func (c *AllocFSCommand) Synopsis() string { return "List, print or describe an allocation's files" }

func (c *AllocFSCommand) Help() string {
	return helpText(`
Usage: drover alloc fs [options] <alloc> [<path>]
       drover alloc fs ls|cat|stat [options] <alloc> [<path>]

  Lists the directory <path> (default "/") of the allocation with ID
  <alloc> (or a unique prefix of one), or prints the file <path>; with
  -stat describes it instead. The ls, cat and stat subcommands do one of
  these each.`+fsPathHelp, `
FS Options:

  -stat
    Describe <path> (mode, size, modification time, content type)
    instead of listing or printing it.
`+fsHumanHelp)
}

func (c *AllocFSCommand) Run(args []string) int {
	var stat, machine bool
	fs := c.flagSet("alloc fs")
	fs.BoolVar(&stat, "stat", false, "")
	fs.BoolVar(&machine, "H", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) < 1 || len(args) > 2 {
		return c.usageError("alloc fs", "<alloc> and at most one path")
	}
	path := "/"
	if len(args) == 2 {
		path = args[1]
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	info, err := client.AllocFS().Stat(ctx, args[0], path)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading %q of allocation %q: %s", path, args[0], err))
		return exitError
	}
	switch {
	case stat:
		c.Ui.Output(formatFileInfos([]*structs.AllocFileInfo{info}, machine, true))
		return 0
	case info.IsDir:
		return listDir(ctx, &c.Meta, client.AllocFS(), args[0], path, machine)
	}
	return catFile(ctx, &c.Meta, client.AllocFS(), args[0], path)
}

// AllocFSListCommand is `drover alloc fs ls [-H] ALLOC [PATH]`.
type AllocFSListCommand struct{ Meta }

func (c *AllocFSListCommand) Synopsis() string { return "List a directory of an allocation" }

func (c *AllocFSListCommand) Help() string {
	return helpText(`
Usage: drover alloc fs ls [options] <alloc> [<path>]

  Lists the directory <path> (default "/") of the allocation with ID
  <alloc> (or a unique prefix of one): mode, size, modification time and
  name of each entry; directories end in "/".`+fsPathHelp, `
List Options:
`+fsHumanHelp)
}

func (c *AllocFSListCommand) Run(args []string) int {
	var machine bool
	fs := c.flagSet("alloc fs ls")
	fs.BoolVar(&machine, "H", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) < 1 || len(args) > 2 {
		return c.usageError("alloc fs ls", "<alloc> and at most one path")
	}
	path := "/"
	if len(args) == 2 {
		path = args[1]
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	return listDir(ctx, &c.Meta, client.AllocFS(), args[0], path, machine)
}

// AllocFSCatCommand is `drover alloc fs cat ALLOC PATH`.
type AllocFSCatCommand struct{ Meta }

func (c *AllocFSCatCommand) Synopsis() string { return "Print a file of an allocation" }

func (c *AllocFSCatCommand) Help() string {
	return helpText(`
Usage: drover alloc fs cat [options] <alloc> <path>

  Prints the file <path> of the allocation with ID <alloc> (or a unique
  prefix of one) to stdout, byte for byte.`+fsPathHelp, "")
}

func (c *AllocFSCatCommand) Run(args []string) int {
	args, ok := c.parse(c.flagSet("alloc fs cat"), args)
	if !ok {
		return exitError
	}
	if len(args) != 2 {
		return c.usageError("alloc fs cat", "two arguments: <alloc> <path>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	return catFile(ctx, &c.Meta, client.AllocFS(), args[0], args[1])
}

// AllocFSStatCommand is `drover alloc fs stat [-H] ALLOC PATH`.
type AllocFSStatCommand struct{ Meta }

func (c *AllocFSStatCommand) Synopsis() string { return "Describe a file of an allocation" }

func (c *AllocFSStatCommand) Help() string {
	return helpText(`
Usage: drover alloc fs stat [options] <alloc> <path>

  Describes the file or directory <path> of the allocation with ID
  <alloc> (or a unique prefix of one): mode, size, modification time,
  content type and name.`+fsPathHelp, `
Stat Options:
`+fsHumanHelp)
}

func (c *AllocFSStatCommand) Run(args []string) int {
	var machine bool
	fs := c.flagSet("alloc fs stat")
	fs.BoolVar(&machine, "H", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 2 {
		return c.usageError("alloc fs stat", "two arguments: <alloc> <path>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	info, err := client.AllocFS().Stat(ctx, args[0], args[1])
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading %q of allocation %q: %s", args[1], args[0], err))
		return exitError
	}
	c.Ui.Output(formatFileInfos([]*structs.AllocFileInfo{info}, machine, true))
	return 0
}

// listDir prints the directory path of the allocation as a table.
func listDir(ctx context.Context, m *Meta, fs *api.AllocFS, alloc, path string, machine bool) int {
	files, err := fs.List(ctx, alloc, path)
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error listing %q of allocation %q: %s", path, alloc, err))
		return exitError
	}
	if len(files) > 0 {
		m.Ui.Output(formatFileInfos(files, machine, false))
	}
	return 0
}

// catFile copies the file path of the allocation to stdout.
func catFile(ctx context.Context, m *Meta, fs *api.AllocFS, alloc, path string) int {
	rc, err := fs.Cat(ctx, alloc, path)
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error reading %q of allocation %q: %s", path, alloc, err))
		return exitError
	}
	defer rc.Close()
	if _, err := io.Copy(m.stdout(), rc); err != nil && !errors.Is(err, context.Canceled) {
		m.Ui.Error(fmt.Sprintf("Error reading %q of allocation %q: %s", path, alloc, err))
		return exitError
	}
	return 0
}

// formatFileInfos renders files as Nomad's alloc fs does: Mode, Size,
// Modified Time and Name (directories with a trailing "/"), and with
// withType the Content Type before the name. machine prints sizes in
// bytes.
func formatFileInfos(files []*structs.AllocFileInfo, machine, withType bool) string {
	headers := []string{"Mode", "Size", "Modified Time", "Name"}
	if withType {
		headers = []string{"Mode", "Size", "Modified Time", "Content Type", "Name"}
	}
	rows := make([][]string, 0, len(files))
	for _, f := range files {
		if f == nil {
			continue
		}
		name := f.Name
		if f.IsDir {
			name += "/"
		}
		size := fmt.Sprint(f.Size)
		if !machine {
			size = formatIBytes(f.Size)
		}
		row := []string{f.FileMode, size, formatClock(f.ModTime)}
		if withType {
			row = append(row, orNone(f.ContentType))
		}
		rows = append(rows, append(row, name))
	}
	return formatTable(headers, rows)
}

// formatIBytes renders a size in binary units as go-humanize's IBytes
// does (which Nomad's alloc fs uses): "512 B", "4.0 KiB", "12 MiB".
func formatIBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n) / 1024
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v < 10 {
		return fmt.Sprintf("%.1f %s", v, units[i])
	}
	return fmt.Sprintf("%.0f %s", v, units[i])
}
