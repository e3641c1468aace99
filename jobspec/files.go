package jobspec

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// maxFileBytes bounds what file() and templatefile() read.
const maxFileBytes = 4 << 20

// fileReader reads the files that file(), fileexists() and templatefile()
// name, relative paths from dir (the job file's directory). As in Nomad,
// any path on the submitting machine may be read: it is the user's own
// machine. A nil fileReader refuses them all: a job parsed by the agent
// (/v1/jobs/parse) must not read the agent's files.
type fileReader struct {
	dir string
}

var errNoFiles = errors.New("file functions are available only to a job file read from disk by the CLI")

func (r *fileReader) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(r.dir, p)
}

func (r *fileReader) read(p string) (string, error) {
	if r == nil {
		return "", errNoFiles
	}
	f, err := os.Open(r.path(p))
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return "", err
	}
	if len(data) > maxFileBytes {
		return "", fmt.Errorf("%s is larger than %d MiB", p, maxFileBytes>>20)
	}
	if !utf8.Valid(data) {
		return "", fmt.Errorf("%s is not UTF-8 text", p)
	}
	return string(data), nil
}

var pathParam = []function.Parameter{{Name: "path", Type: cty.String}}

func (r *fileReader) fileFunc() function.Function {
	return function.New(&function.Spec{
		Description: "Reads a UTF-8 file, relative to the job file's directory.",
		Params:      pathParam,
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			s, err := r.read(args[0].AsString())
			if err != nil {
				return cty.NilVal, err
			}
			return cty.StringVal(s), nil
		},
	})
}

func (r *fileReader) existsFunc() function.Function {
	return function.New(&function.Spec{
		Description: "Tells whether a file exists, relative to the job file's directory.",
		Params:      pathParam,
		Type:        function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if r == nil {
				return cty.NilVal, errNoFiles
			}
			fi, err := os.Stat(r.path(args[0].AsString()))
			switch {
			case errors.Is(err, os.ErrNotExist):
				return cty.False, nil
			case err != nil:
				return cty.NilVal, err
			case !fi.Mode().IsRegular():
				return cty.NilVal, fmt.Errorf("%s is not a regular file", args[0].AsString())
			}
			return cty.True, nil
		},
	})
}

// templateFunc renders a file as an HCL string template with the given
// variables and the other functions (templatefile itself excluded: no
// recursion). Its loops and interpolations charge b like the job's own.
func (r *fileReader) templateFunc(b *budget, funcs map[string]function.Function) function.Function {
	return function.New(&function.Spec{
		Description: "Renders a template file with the given variables.",
		Params:      []function.Parameter{{Name: "path", Type: cty.String}, {Name: "vars", Type: cty.DynamicPseudoType}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			path := args[0].AsString()
			src, err := r.read(path)
			if err != nil {
				return cty.NilVal, err
			}
			vars := args[1]
			if !vars.Type().IsObjectType() && !vars.Type().IsMapType() {
				return cty.NilVal, fmt.Errorf("vars must be an object or a map")
			}
			if err := CheckTemplateDepth(path, []byte(src), defaultTemplateDepth); err != nil {
				return cty.NilVal, err
			}
			expr, diags := hclsyntax.ParseTemplate([]byte(src), path, hcl.InitialPos)
			if diags.HasErrors() {
				return cty.NilVal, diags
			}
			if diags := instrument(expr, b); diags.HasErrors() {
				return cty.NilVal, diags
			}
			ctx := &hcl.EvalContext{Variables: vars.AsValueMap(), Functions: funcs}
			v, diags := expr.Value(ctx)
			if diags.HasErrors() {
				return cty.NilVal, diags
			}
			return v, nil
		},
	})
}
