package sim

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// table reads a CSV file whose first line names its columns, so columns
// are found by name and files with fewer (optional) columns still load.
type table struct {
	name string // file name, for errors
	r    *csv.Reader
	cols map[string]int
}

// newTable reads the header of r and checks that every required column
// is present. name is used in errors ("name:line: ...").
func newTable(r io.Reader, name string, required []string) (*table, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty file, want a header line", name)
	}
	if err != nil {
		return nil, csvError(name, err)
	}
	t := &table{name: name, r: cr, cols: make(map[string]int, len(header))}
	for i, h := range header {
		t.cols[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	var missing []string
	for _, c := range required {
		if _, ok := t.cols[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s:1: header lacks column(s) %s", name, strings.Join(missing, ", "))
	}
	return t, nil
}

// next returns the next data row, or io.EOF after the last one.
func (t *table) next() (*row, error) {
	rec, err := t.r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, csvError(t.name, err)
	}
	line, _ := t.r.FieldPos(0)
	return &row{t: t, rec: rec, line: line}, nil
}

// csvError turns an encoding/csv error into "file:line: problem".
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: %w", name, pe.Line, pe.Err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// row is one data line. Its accessors keep the first problem in err, so a
// caller reads every field and checks once.
type row struct {
	t    *table
	rec  []string
	line int
	err  error
}

// str returns the column's trimmed value, "" when the file lacks it.
func (r *row) str(col string) string {
	i, ok := r.t.cols[col]
	if !ok || i >= len(r.rec) {
		return ""
	}
	return strings.TrimSpace(r.rec[i])
}

// num returns the column as an integer in [lo, hi]. An empty value is 0.
func (r *row) num(col string, lo, hi int64) int64 {
	s := r.str(col)
	if s == "" || r.err != nil {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		r.fail("column %s: %q is not an integer", col, s)
	case v < lo || v > hi:
		r.fail("column %s: %d out of range [%d, %d]", col, v, lo, hi)
	}
	return v
}

// fail records a problem with the row unless one is already recorded.
func (r *row) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%s:%d: %s", r.t.name, r.line, fmt.Sprintf(format, args...))
	}
}

// scan reads the header of r (named name in errors) and calls each for
// every data row, stopping at the first error.
func scan(r io.Reader, name string, required []string, each func(*row) error) error {
	t, err := newTable(r, name, required)
	if err != nil {
		return err
	}
	for {
		rw, err := t.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := each(rw); err != nil {
			return err
		}
	}
}
