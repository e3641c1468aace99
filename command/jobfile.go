package command

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/droverhq/drover/jobspec"
	"github.com/droverhq/drover/structs"
)

// maxVarFileBytes bounds one -var-file.
const maxVarFileBytes = 4 << 20

// jobInput holds the -var and -var-file flags of job run, plan and
// validate, each repeatable and kept in order (a later one wins).
type jobInput struct {
	vars     stringList
	varFiles stringList
}

// jobInputHelp documents the flags of jobInput for a command's help.
const jobInputHelp = `
  -var 'name=value'
    Set the job file's variable "name"; repeatable, a later one wins.
    Values also come from NOMAD_VAR_name or DROVER_VAR_name in the
    environment and from -var-file, and -var wins over both.

  -var-file=path
    Read variable values from an HCL ("name = value") or .json file;
    repeatable, a later file wins.`

func (in *jobInput) flags(fs *flag.FlagSet) {
	fs.Var(&in.vars, "var", "")
	fs.Var(&in.varFiles, "var-file", "")
}

// options reads the var files and returns the parse options, with the
// environment for NOMAD_VAR_ and DROVER_VAR_.
func (in jobInput) options() (jobspec.Options, error) {
	opts := jobspec.Options{Vars: in.vars, Env: os.Environ()}
	for _, path := range in.varFiles {
		src, err := readBounded(path, maxVarFileBytes)
		if err != nil {
			return opts, fmt.Errorf("read var file: %w", err)
		}
		opts.VarFiles = append(opts.VarFiles, jobspec.VarFile{Name: path, Src: src})
	}
	return opts, nil
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(src)) > limit {
		return nil, fmt.Errorf("%s is larger than %s", path, sizeString(limit))
	}
	return src, nil
}

// loadJobWith parses and validates a job file ("-" reads stdin) with the
// -var and -var-file values in. On failure it prints every problem, one
// per line as file:line,col: ..., and returns ok false.
func (m *Meta) loadJobWith(path string, stdin io.Reader, in jobInput) (*structs.Job, bool) {
	var job *structs.Job
	opts, err := in.options()
	switch {
	case err != nil:
	case path == "-":
		if stdin == nil {
			stdin = os.Stdin
		}
		var src []byte
		if src, err = io.ReadAll(stdin); err == nil {
			// file() and templatefile() read from the working directory.
			opts.FileDir = "."
			job, err = jobspec.ParseWith("<stdin>", src, opts)
		}
	default:
		opts.FileDir = filepath.Dir(path)
		job, err = jobspec.ParseFileWith(path, opts)
	}
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error parsing job file %s:", path))
		for _, line := range jobErrorLines(err) {
			m.Ui.Error(line)
		}
		return nil, false
	}
	return job, true
}

// jobErrorLines returns one line per problem in a jobspec error.
func jobErrorLines(err error) []string {
	var es jobspec.Errors
	if errors.As(err, &es) {
		lines := make([]string, len(es))
		for i, e := range es {
			lines[i] = e.Error()
		}
		return lines
	}
	return []string{err.Error()}
}

// sizeString writes n bytes in the largest whole unit.
func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
