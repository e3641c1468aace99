package command

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/droverhq/drover/jobspec"
	"github.com/droverhq/drover/structs"
)

// loadJob parses and validates a job file ("-" reads stdin). On failure it
// prints every problem, one per line as file:line,col: ..., and returns
// ok false.
func (m *Meta) loadJob(path string, stdin io.Reader) (*structs.Job, bool) {
	var (
		job *structs.Job
		err error
	)
	if path == "-" {
		if stdin == nil {
			stdin = os.Stdin
		}
		var src []byte
		if src, err = io.ReadAll(stdin); err == nil {
			job, err = jobspec.Parse("<stdin>", src)
		}
	} else {
		job, err = jobspec.ParseFile(path)
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
