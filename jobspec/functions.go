package jobspec

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions returns the functions of Nomad's HCL2 job files that Drover
// has, each bounded by b (see boundedFunc). files reads file(),
// fileexists() and templatefile() paths; nil refuses them.
func functions(b *budget, files *fileReader) map[string]function.Function {
	fs := map[string]function.Function{
		"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "floor": stdlib.FloorFunc,
		"log": stdlib.LogFunc, "max": stdlib.MaxFunc, "min": stdlib.MinFunc, "pow": stdlib.PowFunc,
		"signum": stdlib.SignumFunc, "parseint": stdlib.ParseIntFunc,

		"chomp": stdlib.ChompFunc, "format": stdlib.FormatFunc, "formatlist": stdlib.FormatListFunc,
		"indent": stdlib.IndentFunc, "join": stdlib.JoinFunc, "lower": stdlib.LowerFunc,
		"regex": stdlib.RegexFunc, "regexall": stdlib.RegexAllFunc, "regex_replace": stdlib.RegexReplaceFunc,
		"replace": stdlib.ReplaceFunc, "split": stdlib.SplitFunc, "strlen": stdlib.StrlenFunc,
		"strrev": stdlib.ReverseFunc, "substr": stdlib.SubstrFunc, "title": stdlib.TitleFunc,
		"trim": stdlib.TrimFunc, "trimprefix": stdlib.TrimPrefixFunc, "trimspace": stdlib.TrimSpaceFunc,
		"trimsuffix": stdlib.TrimSuffixFunc, "upper": stdlib.UpperFunc,

		"chunklist": stdlib.ChunklistFunc, "coalesce": coalesceFunc, "coalescelist": stdlib.CoalesceListFunc,
		"compact": stdlib.CompactFunc, "concat": stdlib.ConcatFunc, "contains": stdlib.ContainsFunc,
		"distinct": stdlib.DistinctFunc, "element": stdlib.ElementFunc, "flatten": stdlib.FlattenFunc,
		"index": stdlib.IndexFunc, "keys": stdlib.KeysFunc, "length": lengthFunc,
		"lookup": stdlib.LookupFunc, "merge": stdlib.MergeFunc, "range": stdlib.RangeFunc,
		"reverse": stdlib.ReverseListFunc, "setintersection": stdlib.SetIntersectionFunc,
		"setsubtract": stdlib.SetSubtractFunc, "setunion": stdlib.SetUnionFunc, "slice": stdlib.SliceFunc,
		"sort": stdlib.SortFunc, "values": stdlib.ValuesFunc, "zipmap": stdlib.ZipmapFunc,

		"csvdecode": stdlib.CSVDecodeFunc, "jsondecode": stdlib.JSONDecodeFunc, "jsonencode": stdlib.JSONEncodeFunc,
		"formatdate": stdlib.FormatDateFunc, "timeadd": stdlib.TimeAddFunc,

		"tobool": stdlib.MakeToFunc(cty.Bool), "tonumber": stdlib.MakeToFunc(cty.Number),
		"tostring": stdlib.MakeToFunc(cty.String), "tolist": stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap": stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)), "toset": stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),

		"base64encode": base64EncodeFunc, "base64decode": base64DecodeFunc,
		"md5": hashFunc(md5.New), "sha1": hashFunc(sha1.New), "sha256": hashFunc(sha256.New), "sha512": hashFunc(sha512.New),
		"uuidv4": uuidV4Func,

		"file": files.fileFunc(), "fileexists": files.existsFunc(),
	}
	for name, f := range fs {
		fs[name] = boundedFunc(name, f, b)
	}
	// templatefile calls the others, so it is built from the bounded set.
	fs["templatefile"] = boundedFunc("templatefile", files.templateFunc(b, maps.Clone(fs)), b)
	// can and try evaluate their arguments as expressions; they add no
	// work of their own.
	fs["can"], fs["try"] = tryfunc.CanFunc, tryfunc.TryFunc
	return fs
}

// boundedFunc wraps f so that it refuses arguments larger than
// maxValueBytes, format widths above maxFormatWidth and replacements
// that could grow past the limit, and charges its result to b: one
// result is at most maxValueBytes and maxCollection elements.
func boundedFunc(name string, f function.Function, b *budget) function.Function {
	// The parameters take any type, so that the arguments reach Impl
	// before any conversion (a huge number printed as a string hangs);
	// f.Call converts them after the checks.
	params, orig := f.Params(), f.Params()
	for i := range params {
		params[i].Type = cty.DynamicPseudoType
	}
	var varParam *function.Parameter
	origVar := f.VarParam()
	if vp := origVar; vp != nil {
		copied := *vp
		copied.Type = cty.DynamicPseudoType
		varParam = &copied
	}
	spec := &function.Spec{
		Description: f.Description(),
		Params:      params,
		VarParam:    varParam,
		Type: func(args []cty.Value) (cty.Type, error) {
			for _, a := range args {
				if err := checkNumbers(a); err != nil {
					return cty.NilType, fmt.Errorf("%s: %w", name, err)
				}
			}
			args, err := convertArgs(args, orig, origVar)
			if err != nil {
				return cty.NilType, err
			}
			return f.ReturnTypeForValues(args)
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			in := 0
			for _, a := range args {
				in += valueSize(a, maxValueBytes+1)
				if err := checkNumbers(a); err != nil {
					return cty.NilVal, fmt.Errorf("%s: %w", name, err)
				}
			}
			if in > maxValueBytes {
				return cty.NilVal, fmt.Errorf("%s: arguments larger than %d MiB", name, maxValueBytes>>20)
			}
			args, err := convertArgs(args, orig, origVar)
			if err != nil {
				return cty.NilVal, err
			}
			if err := precheck(name, args); err != nil {
				return cty.NilVal, fmt.Errorf("%s: %w", name, err)
			}
			v, err := f.Call(args)
			if err != nil {
				return cty.NilVal, err
			}
			if v.IsKnown() && !v.IsNull() && (v.Type().IsCollectionType() || v.Type().IsTupleType()) && v.LengthInt() > maxCollection {
				return cty.NilVal, fmt.Errorf("%s: result has more than %d elements", name, maxCollection)
			}
			if err := checkNumbers(v); err != nil {
				return cty.NilVal, fmt.Errorf("%s: %w", name, err)
			}
			size := valueSize(v, maxValueBytes+1)
			if size > maxValueBytes {
				return cty.NilVal, fmt.Errorf("%s: result larger than %d MiB", name, maxValueBytes>>20)
			}
			if err := b.chargeBytes(size); err != nil {
				return cty.NilVal, fmt.Errorf("%s: %w", name, err)
			}
			return v, nil
		},
	}
	return function.New(spec)
}

// convertArgs converts args to the types of the parameters, as HCL does
// before it calls a function, once checkNumbers has passed them.
func convertArgs(args []cty.Value, params []function.Parameter, varParam *function.Parameter) ([]cty.Value, error) {
	out := make([]cty.Value, len(args))
	for i, a := range args {
		var p *function.Parameter
		switch {
		case i < len(params):
			p = &params[i]
		case varParam != nil:
			p = varParam
		}
		if p == nil || (a.IsNull() && p.AllowNull) {
			out[i] = a
			continue
		}
		v, err := convert.Convert(a, p.Type)
		if err != nil {
			return nil, function.NewArgError(i, err)
		}
		out[i] = v
	}
	return out, nil
}

// precheck refuses the arguments of the functions whose result can be
// much larger than their arguments, before the work is done.
func precheck(name string, args []cty.Value) error {
	switch name {
	case "format", "formatlist":
		if len(args) > 0 && args[0].Type() == cty.String && args[0].IsKnown() && !args[0].IsNull() {
			return checkFormatWidths(args[0].AsString())
		}
	case "replace", "regex_replace":
		if len(args) == 3 && allKnownStrings(args) {
			s, sub, repl := args[0].AsString(), args[1].AsString(), args[2].AsString()
			n := len(s) + 1 // matches at most: one per byte and one at the end
			if name == "replace" && sub != "" {
				n = strings.Count(s, sub)
			}
			if len(s)+n*len(repl) > maxValueBytes {
				return fmt.Errorf("result could be larger than %d MiB", maxValueBytes>>20)
			}
		}
	case "indent":
		if len(args) == 2 && args[0].IsKnown() && args[1].IsKnown() && !args[0].IsNull() && !args[1].IsNull() {
			n, _ := args[0].AsBigFloat().Int64()
			if lines := strings.Count(args[1].AsString(), "\n") + 1; n < 0 || n > maxFormatWidth || int64(lines)*n > maxValueBytes {
				return fmt.Errorf("indent too large")
			}
		}
	}
	return nil
}

func allKnownStrings(args []cty.Value) bool {
	for _, a := range args {
		if !a.IsKnown() || a.IsNull() || a.Type() != cty.String {
			return false
		}
	}
	return true
}

// checkFormatWidths refuses width or precision numbers above
// maxFormatWidth in the verbs of a format string ("%99999999d").
func checkFormatWidths(f string) error {
	n, inVerb := 0, false
	for _, r := range f {
		switch {
		case r == '%':
			inVerb, n = !inVerb, 0
		case inVerb && r >= '0' && r <= '9':
			if n = n*10 + int(r-'0'); n > maxFormatWidth {
				return fmt.Errorf("width or precision above %d", maxFormatWidth)
			}
		case inVerb && (r == '.' || r == '-' || r == '+' || r == '#' || r == ' ' || r == '[' || r == ']'):
			n = 0
		default:
			inVerb = false
		}
	}
	return nil
}

// valueSize is the size of v: string bytes plus one per element,
// counted until it passes limit.
func valueSize(v cty.Value, limit int) int {
	if !v.IsKnown() || v.IsNull() {
		return 0
	}
	v, _ = v.Unmark()
	ty := v.Type()
	switch {
	case ty == cty.String:
		return len(v.AsString())
	case ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType():
		n := 0
		for it := v.ElementIterator(); it.Next() && n <= limit; {
			k, e := it.Element()
			n += 1 + valueSize(e, limit-n)
			if ty.IsMapType() || ty.IsObjectType() {
				n += len(k.AsString())
			}
		}
		return n
	}
	return 1
}

var base64EncodeFunc = function.New(&function.Spec{
	Description: "Encodes a string in base64.",
	Params:      []function.Parameter{{Name: "str", Type: cty.String}},
	Type:        function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(base64.StdEncoding.EncodeToString([]byte(args[0].AsString()))), nil
	},
})

var base64DecodeFunc = function.New(&function.Spec{
	Description: "Decodes a base64 string; the result must be UTF-8.",
	Params:      []function.Parameter{{Name: "str", Type: cty.String}},
	Type:        function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		out, err := base64.StdEncoding.DecodeString(args[0].AsString())
		if err != nil {
			return cty.NilVal, fmt.Errorf("invalid base64: %w", err)
		}
		if !utf8.Valid(out) {
			return cty.NilVal, fmt.Errorf("the decoded bytes are not UTF-8")
		}
		return cty.StringVal(string(out)), nil
	},
})

func hashFunc(h func() hash.Hash) function.Function {
	return function.New(&function.Spec{
		Description: "Returns the hex digest of a string.",
		Params:      []function.Parameter{{Name: "str", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			sum := h()
			sum.Write([]byte(args[0].AsString()))
			return cty.StringVal(hex.EncodeToString(sum.Sum(nil))), nil
		},
	})
}

var uuidV4Func = function.New(&function.Spec{
	Description: "Returns a random UUID.",
	Type:        function.StaticReturnType(cty.String),
	Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
		return cty.StringVal(uuid.NewString()), nil
	},
})

// coalesceFunc is Nomad's coalesce: the first argument that is neither
// null nor an empty string (cty's own skips nulls only).
var coalesceFunc = function.New(&function.Spec{
	Description: "Returns the first argument that is not null or an empty string.",
	VarParam:    &function.Parameter{Name: "vals", Type: cty.DynamicPseudoType, AllowNull: true},
	Type: func(args []cty.Value) (cty.Type, error) {
		return stdlib.CoalesceFunc.ReturnTypeForValues(args)
	},
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		for _, a := range args {
			if a.IsNull() || (a.Type() == cty.String && a.AsString() == "") {
				continue
			}
			return convert.Convert(a, retType)
		}
		return cty.NilVal, fmt.Errorf("no non-null, non-empty-string arguments")
	},
})

// lengthFunc is Nomad's length: of a collection, or of a string in
// characters (cty's own takes collections only).
var lengthFunc = function.New(&function.Spec{
	Description: "Returns the number of elements of a collection or characters of a string.",
	Params:      []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowDynamicType: true, AllowUnknown: true, AllowMarked: true}},
	Type:        function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if args[0].Type() == cty.String {
			return stdlib.StrlenFunc.Call(args)
		}
		return stdlib.LengthFunc.Call(args)
	},
})
