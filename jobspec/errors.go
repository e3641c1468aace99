package jobspec

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Error is one problem in a job file. Line and Column are 1-based; both
// are 0 when the problem has no position (a whole-file problem).
type Error struct {
	Filename string
	Line     int
	Column   int
	Summary  string
	Detail   string
}

// Error renders "file:line,col: summary; detail", the way HCL prints a
// diagnostic but with only the start of the range.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Filename)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d,%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	b.WriteString(e.Summary)
	if e.Detail != "" {
		b.WriteString("; ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Errors is every problem found in a job file, in source order. Parse
// returns it as its error; use errors.As to get at the positions.
type Errors []*Error

// Error renders one problem per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// errorsFromDiags turns HCL error diagnostics into Errors, sorted by
// position and without duplicates. It returns nil when there are none.
func errorsFromDiags(filename string, diags hcl.Diagnostics) error {
	var es Errors
	seen := map[string]bool{}
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		e := &Error{Filename: filename, Summary: d.Summary, Detail: d.Detail}
		if d.Subject != nil {
			e.Line, e.Column = d.Subject.Start.Line, d.Subject.Start.Column
			if d.Subject.Filename != "" {
				e.Filename = d.Subject.Filename // a -var-file's own problems
			}
		}
		if key := e.Error(); !seen[key] {
			seen[key] = true
			es = append(es, e)
		}
	}
	if len(es) == 0 {
		return nil
	}
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return es
}

// diag builds an error diagnostic at rng.
func diag(rng hcl.Range, summary, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  rng.Ptr(),
	}
}
