package jobspec

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// decoder turns the HCL body of one file into a job. It collects every
// problem in diags instead of stopping at the first, so that one run of
// the parser reports all of them.
type decoder struct {
	src   []byte
	diags hcl.Diagnostics
	// portLabels are the port labels of the group being decoded (network.go).
	portLabels map[string]hcl.Range
	// ctx holds var, local and the functions; nil evaluates constants only.
	ctx    *hcl.EvalContext
	budget *budget
}

func (d *decoder) errorf(rng hcl.Range, summary, format string, args ...any) {
	d.diags = append(d.diags, diag(rng, summary, format, args...))
}

// value evaluates expr into a plain Go value: string, int, float64,
// bool, []any, map[string]any or nil. var.* and local.* are evaluated,
// functions called; interpolations of runtime values in strings
// ("${attr.kernel.name}", "${NOMAD_ALLOC_ID}") are kept as written, since
// the scheduler and the client resolve them (see eval.go). ok is false
// when a problem was recorded.
func (d *decoder) value(expr hcl.Expression) (v any, ok bool) {
	cv, ok := d.eval(expr)
	if !ok {
		return nil, false
	}
	return d.fromCty(cv, expr.Range())
}

// interpolation finds the source text "${ expr }" around the expression at
// rng: the last "${" in src[lo:rng.Start] and the last "}" in
// src[rng.End:hi]. It returns the text and the offset just after it.
func (d *decoder) interpolation(lo int, rng hcl.Range, hi int) (raw string, end int, ok bool) {
	start, stop := rng.Start.Byte, rng.End.Byte
	if lo < 0 || lo > start || start > stop || stop > hi || hi > len(d.src) {
		return "", 0, false
	}
	open := bytes.LastIndex(d.src[lo:start], []byte("${"))
	if open < 0 || strings.Trim(string(d.src[lo+open+2:start]), " \t\r\n~") != "" {
		return "", 0, false
	}
	closeAt := bytes.LastIndexByte(d.src[stop:hi], '}')
	if closeAt < 0 {
		return "", 0, false
	}
	end = stop + closeAt + 1
	return string(d.src[lo+open : end]), end, true
}

// fromCty converts a known cty value into a plain Go value. Whole numbers
// become int, others float64.
func (d *decoder) fromCty(v cty.Value, rng hcl.Range) (any, bool) {
	if v.IsNull() {
		return nil, true
	}
	if !v.IsWhollyKnown() || v.IsMarked() {
		d.errorf(rng, "Invalid value", "The value must be known when the job file is read.")
		return nil, false
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString(), true
	case t == cty.Bool:
		return v.True(), true
	case t == cty.Number:
		return numberValue(v.AsBigFloat()), true
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		out := make([]any, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			gv, ok := d.fromCty(ev, rng)
			if !ok {
				return nil, false
			}
			out = append(out, gv)
		}
		return out, true
	case t.IsMapType() || t.IsObjectType():
		out := make(map[string]any, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			gv, ok := d.fromCty(ev, rng)
			if !ok {
				return nil, false
			}
			out[k.AsString()] = gv
		}
		return out, true
	}
	d.errorf(rng, "Invalid value", "A value of type %s cannot be used in a job file.", t.FriendlyName())
	return nil, false
}

// numberValue returns an int for whole numbers that fit, else a float64.
func numberValue(f *big.Float) any {
	if f.IsInt() {
		if i, acc := f.Int64(); acc == big.Exact && i >= math.MinInt && i <= math.MaxInt {
			return int(i)
		}
	}
	v, _ := f.Float64()
	return v
}

// scalarString prints a string, number or bool; ok is false for anything
// else.
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int:
		return strconv.Itoa(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}
