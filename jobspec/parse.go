package jobspec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/droverhq/drover/structs"
)

// Parse reads a job file, HCL or JSON, and returns the job canonicalized
// and validated. JSON is recognised by a ".json" filename or by content
// that starts with "{". filename is used in error positions only.
//
// On failure the error is an Errors value with one entry per problem,
// each rendered as "file:line,col: summary; detail".
func Parse(filename string, src []byte) (*structs.Job, error) {
	return ParseLimited(filename, src, structs.DefaultLimits())
}

// ParseLimited is Parse within limits: HCL nesting deeper than
// limits.hcl_max_depth (JSON: limits.json_max_depth) is refused before
// the recursive parsers see it, and the job must pass Job.CheckLimits.
// Each refusal names its limit and setting.
func ParseLimited(filename string, src []byte, limits structs.Limits) (*structs.Job, error) {
	return ParseWith(filename, src, Options{Limits: limits})
}

// Options are a parse's inputs besides the job file.
type Options struct {
	// Limits bound the file (zero fields: the defaults).
	Limits structs.Limits
	// Vars are -var values, "name=value", in order: a later one wins.
	Vars []string
	// VarFiles are -var-file contents in order: a later file wins over
	// an earlier one, and -var over them all.
	VarFiles []VarFile
	// Env is the environment (os.Environ()) searched for
	// NOMAD_VAR_<name> and DROVER_VAR_<name>; nil reads none.
	Env []string
	// FileDir is where file(), fileexists() and templatefile() resolve
	// relative paths. Empty refuses them: only the CLI reading a job file
	// from disk sets it.
	FileDir string
}

// ParseWith is ParseLimited with variable values and file access.
func ParseWith(filename string, src []byte, opts Options) (*structs.Job, error) {
	limits := opts.Limits.WithDefaults()
	if err := checkDepth(filename, src, limits); err != nil {
		return nil, err
	}
	var (
		job *structs.Job
		pos hcl.Pos
		err error
	)
	switch {
	case isJSON(filename, src) && (len(opts.Vars) > 0 || len(opts.VarFiles) > 0):
		return nil, Errors{{Filename: filename, Summary: "Variables in a JSON job", Detail: "-var and -var-file apply to HCL job files only."}}
	case isJSON(filename, src):
		job, pos, err = parseJSON(filename, src)
	default:
		job, pos, err = parseHCL(filename, src, opts)
	}
	if err != nil {
		return nil, err
	}
	if err := job.CheckShape(); err != nil {
		return nil, validationErrors(filename, pos, err)
	}
	if err := job.CheckLimits(limits); err != nil {
		return nil, validationErrors(filename, pos, err)
	}
	job.Canonicalize()
	if err := job.Validate(); err != nil {
		return nil, validationErrors(filename, pos, err)
	}
	return job, nil
}

// ParseFile reads and parses the job file at path; file() and the other
// file functions read relative to its directory.
func ParseFile(path string) (*structs.Job, error) {
	return ParseFileWith(path, Options{})
}

// ParseFileWith is ParseFile with options; FileDir defaults to the job
// file's directory.
func ParseFileWith(path string, opts Options) (*structs.Job, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read job file: %w", err)
	}
	if opts.FileDir == "" {
		opts.FileDir = filepath.Dir(path)
	}
	return ParseWith(path, src, opts)
}

// checkDepth refuses src when it nests deeper than the limits allow, at
// the first token too deep. The lexer and the byte scan do not recurse.
func checkDepth(filename string, src []byte, limits structs.Limits) error {
	if isJSON(filename, src) {
		if d := structs.JSONDepth(src, limits.JSONMaxDepth+1); d > limits.JSONMaxDepth {
			return Errors{{Filename: filename, Line: 1, Column: 1, Summary: "Nested too deep",
				Detail: fmt.Sprintf("objects and arrays nest deeper than the limit %d (limits.json_max_depth)", limits.JSONMaxDepth)}}
		}
		return nil
	}
	return CheckHCLDepth(filename, src, limits.HCLMaxDepth)
}

func isJSON(filename string, src []byte) bool {
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(src, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return true
	}
	return strings.EqualFold(filepath.Ext(filename), ".json")
}

// validationErrors turns the joined error of Job.Validate into Errors, one
// per problem with its full context ("job "x": group "g": task "t": ..."),
// placed at the job's definition.
func validationErrors(filename string, pos hcl.Pos, err error) error {
	var lines []string
	flattenJoined(err, "", &lines)
	es := make(Errors, 0, len(lines))
	for _, line := range lines {
		es = append(es, &Error{Filename: filename, Line: pos.Line, Column: pos.Column, Summary: "Invalid job", Detail: line})
	}
	return es
}

// flattenJoined appends one line per leaf of a tree of errors.Join and
// fmt.Errorf("context: %w", joined) values, each line carrying the
// contexts above it.
func flattenJoined(err error, prefix string, out *[]string) {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			flattenJoined(e, prefix, out)
		}
		return
	}
	if inner := errors.Unwrap(err); inner != nil {
		if _, isJoin := inner.(interface{ Unwrap() []error }); isJoin {
			if context, ok := strings.CutSuffix(err.Error(), inner.Error()); ok {
				flattenJoined(inner, prefix+context, out)
				return
			}
		}
	}
	for line := range strings.SplitSeq(err.Error(), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			*out = append(*out, prefix+line)
		}
	}
}

// parseHCL decodes an HCL job file. pos is where the job block starts.
func parseHCL(filename string, src []byte, opts Options) (job *structs.Job, pos hcl.Pos, err error) {
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, pos, errorsFromDiags(filename, diags)
	}
	d := newDecoder(src, file.Body, opts)
	if err := errorsFromDiags(filename, d.diags); err != nil {
		return nil, pos, err
	}
	c := d.content(file.Body, rootSchema)
	d.inputs(filename, c, opts)
	if err := errorsFromDiags(filename, d.diags); err != nil {
		return nil, pos, err
	}
	jobs := c.Blocks.OfType("job")
	switch {
	case len(jobs) == 0 && len(d.diags) == 0:
		start := hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos}
		d.errorf(start, "Missing job block", "A job file must define one job \"<id>\" { ... } block.")
	case len(jobs) > 0:
		for _, extra := range jobs[1:] {
			d.errorf(extra.DefRange, "Duplicate job block", "A job file defines one job; the first is at line %d.", jobs[0].DefRange.Start.Line)
		}
		job, pos = d.job(jobs[0]), jobs[0].DefRange.Start
	}
	if err := errorsFromDiags(filename, d.diags); err != nil {
		return nil, pos, err
	}
	return job, pos, nil
}

var jobTypes = []string{structs.JobTypeService, structs.JobTypeBatch, structs.JobTypeSystem, structs.JobTypeSysBatch}

func (d *decoder) job(b *hcl.Block) *structs.Job {
	j := &structs.Job{ID: b.Labels[0]}
	c := d.content(b.Body, jobSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "type":
			j.Type = d.oneOf(a, jobTypes)
		case "datacenters":
			j.Datacenters, _ = d.stringList(a)
		case "priority":
			if n, ok := d.integer(a, structs.JobMinPriority, structs.JobMaxPriority); ok {
				j.Priority = int(n)
			}
		case "namespace":
			j.Namespace, _ = d.str(a)
		case "queue":
			if q, ok := d.str(a); ok && q != "" && !structs.ValidQueueName(q) {
				d.errorf(a.Expr.Range(), "Invalid queue name", "queue = %q: want 1 to 128 letters, digits or dashes.", q)
			} else {
				j.Queue = q
			}
		case "region":
			j.Region, _ = d.str(a)
		case "preemptible":
			if v, ok := d.boolean(a); ok {
				j.Preemptible = &v
			}
		case "max_run_time":
			if v, ok := d.duration(a); ok {
				j.MaxRunTime = v
			}
		}
	}
	j.Meta = d.stringMap(c, "meta")
	j.Spreads = d.spreads(c)
	jobType := j.Type
	if jobType == "" {
		jobType = structs.JobTypeService
	}
	resched := d.jobReschedule(c, jobType)
	j.Update = d.jobUpdate(c)
	d.jobMisc(c, j) // misc.go
	j.Periodic = d.periodic(c)
	j.ParameterizedJob = d.parameterized(c)
	groups := map[string]*hcl.Block{}
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "group":
			if first, dup := groups[blk.Labels[0]]; dup {
				d.errorf(blk.LabelRanges[0], "Duplicate group", "A group named %q is already defined at line %d.", blk.Labels[0], first.DefRange.Start.Line)
				continue
			}
			groups[blk.Labels[0]] = blk
			j.TaskGroups = append(j.TaskGroups, d.group(blk, jobType, resched, j.Update, j.Migrate))
		case "constraint":
			j.Constraints = appendNonNil(j.Constraints, d.constraint(blk))
		case "affinity":
			j.Affinities = appendNonNil(j.Affinities, d.affinity(blk))
		}
	}
	return j
}

// oneOf reads a string that must be one of allowed.
func (d *decoder) oneOf(a *hcl.Attribute, allowed []string) string {
	s, ok := d.str(a)
	if !ok {
		return ""
	}
	for _, v := range allowed {
		if s == v {
			return s
		}
	}
	d.errorf(a.Expr.Range(), "Invalid value", "%s = %q is not one of %s.", a.Name, s, strings.Join(allowed, ", "))
	return ""
}

func appendNonNil[T any](list []*T, item *T) []*T {
	if item == nil {
		return list
	}
	return append(list, item)
}

// newDecoder prepares the decoding of one HCL file: its loops and
// templates charge one budget, and its functions are bounded by it.
func newDecoder(src []byte, body hcl.Body, opts Options) *decoder {
	b := &budget{}
	var diags hcl.Diagnostics
	if sb, ok := body.(*hclsyntax.Body); ok {
		diags = instrument(sb, b)
	}
	var files *fileReader
	if opts.FileDir != "" {
		files = &fileReader{dir: opts.FileDir}
	}
	return &decoder{src: src, budget: b, diags: diags, ctx: &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.EmptyObjectVal, "local": cty.EmptyObjectVal},
		Functions: functions(b, files),
	}}
}

// inputs evaluates the variables, then the locals, into d.ctx.
func (d *decoder) inputs(filename string, c *hcl.BodyContent, opts Options) {
	vars := d.declareVariables(c)
	if len(d.diags) > 0 {
		return
	}
	d.ctx.Variables["var"] = d.varValues(filename, vars, opts)
	if len(d.diags) > 0 {
		return
	}
	d.evalLocals(c)
}
