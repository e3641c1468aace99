package acl

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Error is one problem in policy rules. Line and Column are 1-based; both
// are 0 when the problem has no position (rules too large).
type Error struct {
	Filename string
	Line     int
	Column   int
	Msg      string
}

// Error renders "file:line,col: message".
func (e *Error) Error() string {
	if e.Line == 0 {
		return e.Filename + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d,%d: %s", e.Filename, e.Line, e.Column, e.Msg)
}

// Errors is every problem found in policy rules, in source order. Parse
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

// add records a problem at the start of rng.
func (es *Errors) add(filename string, rng hcl.Range, format string, args ...any) {
	*es = append(*es, &Error{
		Filename: filename, Line: rng.Start.Line, Column: rng.Start.Column,
		Msg: fmt.Sprintf(format, args...),
	})
}

// addDiags records HCL's error diagnostics as "summary; detail".
func (es *Errors) addDiags(filename string, diags hcl.Diagnostics) {
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		e := &Error{Filename: filename, Msg: d.Summary}
		if d.Detail != "" {
			e.Msg += "; " + d.Detail
		}
		if d.Subject != nil {
			e.Line, e.Column = d.Subject.Start.Line, d.Subject.Start.Column
		}
		*es = append(*es, e)
	}
}

// sorted returns the problems in source order without duplicates, or nil
// when there are none.
func (es Errors) sorted() error {
	if len(es) == 0 {
		return nil
	}
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return slices.CompactFunc(es, func(a, b *Error) bool { return *a == *b })
}
