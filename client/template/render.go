package template

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	texttemplate "text/template"

	"github.com/droverhq/drover/structs"
)

// DefaultMaxOutput bounds one rendered template, in bytes.
const DefaultMaxOutput = 1 << 20

// VarReader reads the variables a task may read (the client asks the
// servers on behalf of the allocation).
type VarReader interface {
	// Read returns the variable at path, nil when there is none.
	Read(ctx context.Context, path string) (*structs.VariableDecrypted, error)
	// List returns the variables under prefix that the task may read.
	List(ctx context.Context, prefix string) ([]*structs.VariableDecrypted, error)
}

// ErrMissingVariable is a render that read a variable that does not
// exist (yet): the hook waits for it, as Nomad's template runner does.
var ErrMissingVariable = errors.New("template: missing variable")

// Input is one render.
type Input struct {
	Template *structs.Template
	// Text is the template: the block's data, or its source file's
	// content.
	Text string
	// Env is the task's environment, for the env function.
	Env map[string]string
	// Vars serves nomadVar and friends; nil refuses them.
	Vars VarReader
	// MaxOutput bounds the output (DefaultMaxOutput when 0).
	MaxOutput int
}

// Result is a render's output and the variables it depends on.
type Result struct {
	Output []byte
	// Paths and Prefixes are the variable paths read and the prefixes
	// listed: a change to any of them re-renders.
	Paths    []string
	Prefixes []string
}

// Render executes the template.
func Render(ctx context.Context, in Input) (*Result, error) {
	t := in.Template
	res := &Result{}
	r := &renderer{ctx: ctx, in: in, res: res}
	tmpl := texttemplate.New(t.DestPath).Funcs(r.funcs())
	tmpl = tmpl.Delims(or(t.LeftDelim, "{{"), or(t.RightDelim, "}}"))
	if t.ErrMissingKey {
		tmpl = tmpl.Option("missingkey=error")
	}
	parsed, err := tmpl.Parse(in.Text)
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	limit := in.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	out := &boundedBuffer{limit: limit}
	if err := parsed.Execute(out, nil); err != nil {
		if r.missing != "" {
			return res, fmt.Errorf("%w %q", ErrMissingVariable, r.missing)
		}
		return nil, fmt.Errorf("render template: %w", err)
	}
	res.Output = out.buf.Bytes()
	return res, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// boundedBuffer fails a write past limit bytes.
type boundedBuffer struct {
	buf   bytes.Buffer
	limit int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.limit {
		return 0, fmt.Errorf("output over %d bytes", b.limit)
	}
	return b.buf.Write(p)
}

// renderer holds one render's state for its functions.
type renderer struct {
	ctx     context.Context
	in      Input
	res     *Result
	missing string
}

// refusedFuncs are consul-template functions that need Consul or Vault.
var refusedFuncs = map[string]string{
	"key": "Consul", "keyExists": "Consul", "keyOrDefault": "Consul", "ls": "Consul", "safeLs": "Consul",
	"tree": "Consul", "safeTree": "Consul", "service": "Consul", "services": "Consul", "connect": "Consul",
	"caRoots": "Consul", "caLeaf": "Consul", "datacenters": "Consul", "node": "Consul", "nodes": "Consul",
	"secret": "Vault", "secrets": "Vault", "pkiCert": "Vault",
}

func (r *renderer) funcs() texttemplate.FuncMap {
	fm := texttemplate.FuncMap{
		"env":            func(name string) string { return r.in.Env[name] },
		"nomadVar":       r.nomadVar,
		"nomadVarExists": r.nomadVarExists,
		"nomadVarList":   r.nomadVarList,
		"toUpper":        strings.ToUpper,
		"toLower":        strings.ToLower,
		"trimSpace":      strings.TrimSpace,
		"trim":           func(cut, s string) string { return strings.Trim(s, cut) },
		"split":          func(sep, s string) []string { return strings.Split(s, sep) },
		"join":           func(sep string, parts []string) string { return strings.Join(parts, sep) },
		"replaceAll":     func(from, to, s string) string { return strings.ReplaceAll(s, from, to) },
		"contains":       func(sub, s string) bool { return strings.Contains(s, sub) },
		"hasPrefix":      func(p, s string) bool { return strings.HasPrefix(s, p) },
		"hasSuffix":      func(p, s string) bool { return strings.HasSuffix(s, p) },
		"base64Encode":   func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
		"base64Decode":   base64Decode,
		"toJSON":         toJSON,
		"parseJSON":      parseJSON,
		"parseInt":       func(s string) (int64, error) { return strconv.ParseInt(strings.TrimSpace(s), 10, 64) },
		"parseBool":      func(s string) (bool, error) { return strconv.ParseBool(strings.TrimSpace(s)) },
		"sort":           func(in []string) []string { out := slices.Clone(in); slices.Sort(out); return out },
	}
	for name, product := range refusedFuncs {
		fm[name] = func(...any) (string, error) {
			return "", fmt.Errorf("%s needs %s, which Drover does not integrate with; use nomadVar for secrets", name, product)
		}
	}
	return fm
}

func (r *renderer) read(path string) (*structs.VariableDecrypted, error) {
	if r.in.Vars == nil {
		return nil, errors.New("variables are not available to this template")
	}
	if !slices.Contains(r.res.Paths, path) {
		r.res.Paths = append(r.res.Paths, path)
	}
	return r.in.Vars.Read(r.ctx, path)
}

// nomadVar returns the items of the variable at path; a variable that
// does not exist stops the render until it does.
func (r *renderer) nomadVar(path string) (map[string]string, error) {
	v, err := r.read(path)
	if err != nil {
		return nil, err
	}
	if v == nil {
		r.missing = path
		return nil, fmt.Errorf("%w %q", ErrMissingVariable, path)
	}
	return v.Items, nil
}

func (r *renderer) nomadVarExists(path string) (bool, error) {
	v, err := r.read(path)
	return v != nil, err
}

// nomadVarList returns the metadata of the variables under prefix.
func (r *renderer) nomadVarList(prefix ...string) ([]*structs.VariableMetadata, error) {
	if r.in.Vars == nil {
		return nil, errors.New("variables are not available to this template")
	}
	p := strings.Join(prefix, "")
	if !slices.Contains(r.res.Prefixes, p) {
		r.res.Prefixes = append(r.res.Prefixes, p)
	}
	vars, err := r.in.Vars.List(r.ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]*structs.VariableMetadata, 0, len(vars))
	for _, v := range vars {
		m := v.VariableMetadata
		out = append(out, &m)
	}
	return out, nil
}

func base64Decode(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	return string(b), err
}

func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func parseJSON(s string) (any, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, err
	}
	return v, nil
}
