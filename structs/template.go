package structs

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Template change modes: what a re-render does to the running task.
const (
	TemplateChangeModeRestart = "restart"
	TemplateChangeModeSignal  = "signal"
	TemplateChangeModeNoop    = "noop"
)

// Bounds on templates and artifacts, checked at submit.
const (
	// MaxTemplatesPerTask and MaxArtifactsPerTask bound a task's blocks.
	MaxTemplatesPerTask = 64
	MaxArtifactsPerTask = 64
	// MaxEmbeddedTemplate is the largest data of one template, in bytes.
	MaxEmbeddedTemplate = 256 << 10
)

// Template renders a file into the task directory before the task starts
// (Nomad's template block; field names are Nomad's). EmbeddedTmpl is the
// template text (data), or SourcePath names a file in the task directory
// (an artifact's, say). DestPath is relative to the task directory. With
// Envvars the rendered KEY=VALUE lines are added to the task's
// environment.
type Template struct {
	SourcePath   string
	DestPath     string
	EmbeddedTmpl string
	ChangeMode   string
	ChangeSignal string
	Splay        time.Duration
	// Perms is the file mode in octal ("0644").
	Perms         string
	LeftDelim     string
	RightDelim    string
	Envvars       bool
	ErrMissingKey bool
}

// Copy returns a copy of t.
func (t *Template) Copy() *Template {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// Canonicalize fills Nomad's defaults: change_mode restart, perms 0644,
// {{ }} delimiters, a 5 s splay.
func (t *Template) Canonicalize() {
	if t.ChangeMode == "" {
		t.ChangeMode = TemplateChangeModeRestart
	}
	if t.Perms == "" {
		t.Perms = "0644"
	}
	if t.LeftDelim == "" {
		t.LeftDelim = "{{"
	}
	if t.RightDelim == "" {
		t.RightDelim = "}}"
	}
}

// Validate checks a template block of task.
func (t *Template) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch {
	case t.SourcePath == "" && t.EmbeddedTmpl == "":
		add("template: needs data or source")
	case t.SourcePath != "" && t.EmbeddedTmpl != "":
		add("template: data and source cannot both be set")
	}
	if len(t.EmbeddedTmpl) > MaxEmbeddedTemplate {
		add("template: data is %d bytes, over %d", len(t.EmbeddedTmpl), MaxEmbeddedTemplate)
	}
	if t.SourcePath != "" {
		if err := CheckTaskRelativePath(t.SourcePath); err != nil {
			add("template: source: %w", err)
		}
	}
	if t.DestPath == "" {
		add("template: missing destination")
	} else if err := CheckTaskRelativePath(t.DestPath); err != nil {
		add("template: destination: %w", err)
	}
	switch t.ChangeMode {
	case "", TemplateChangeModeRestart, TemplateChangeModeNoop:
	case TemplateChangeModeSignal:
		if t.ChangeSignal == "" {
			add("template: change_mode signal needs change_signal")
		}
	case "script":
		add("template: change_mode script is not supported by Drover; use restart, signal or noop")
	default:
		add("template: change_mode %q: want restart, signal or noop", t.ChangeMode)
	}
	if t.ChangeSignal != "" && !validSignal(t.ChangeSignal) {
		add("template: change_signal %q is not a signal name such as SIGHUP", t.ChangeSignal)
	}
	if t.Perms != "" {
		var mode uint32
		if _, err := fmt.Sscanf(t.Perms, "%o", &mode); err != nil || mode > 0o777 || strings.TrimLeft(t.Perms, "01234567") != "" {
			add("template: perms %q: want an octal mode such as \"0644\"", t.Perms)
		}
	}
	if t.Splay < 0 {
		add("template: splay must not be negative")
	}
	return errors.Join(errs...)
}

// CheckTaskRelativePath refuses a path that is absolute or climbs out
// of the task directory. (The client checks again against symlinks.)
func CheckTaskRelativePath(p string) error {
	switch {
	case filepath.IsAbs(p):
		return fmt.Errorf("%q must be relative to the task directory", p)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%q holds a NUL byte", p)
	}
	clean := filepath.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("%q escapes the task directory", p)
	}
	return nil
}

// signalNames are the signals change_signal may name.
var signalNames = []string{"SIGHUP", "SIGINT", "SIGQUIT", "SIGKILL", "SIGUSR1", "SIGUSR2", "SIGTERM", "SIGCONT", "SIGSTOP", "SIGWINCH", "SIGALRM"}

func validSignal(s string) bool { return slices.Contains(signalNames, strings.ToUpper(s)) }

// Artifact getter modes.
const (
	ArtifactModeAny  = "any"
	ArtifactModeFile = "file"
	ArtifactModeDir  = "dir"
)

// TaskArtifact is a file or archive fetched into the task directory
// before the task starts (Nomad's artifact block; field names are
// Nomad's). Drover fetches http, https and file sources.
type TaskArtifact struct {
	GetterSource  string
	GetterOptions map[string]string
	GetterHeaders map[string]string
	GetterMode    string
	// RelativeDest is relative to the task directory ("local/" when
	// empty).
	RelativeDest string
}

// Copy returns a deep copy of a.
func (a *TaskArtifact) Copy() *TaskArtifact {
	if a == nil {
		return nil
	}
	c := *a
	c.GetterOptions = maps.Clone(a.GetterOptions)
	c.GetterHeaders = maps.Clone(a.GetterHeaders)
	return &c
}

// Canonicalize fills the defaults: mode any, destination local/.
func (a *TaskArtifact) Canonicalize() {
	if a.GetterMode == "" {
		a.GetterMode = ArtifactModeAny
	}
	if a.RelativeDest == "" {
		a.RelativeDest = "local/"
	}
}

// artifactOptions are the getter options Drover honours.
var artifactOptions = []string{"checksum", "archive"}

// Validate checks an artifact block.
func (a *TaskArtifact) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if a.GetterSource == "" {
		add("artifact: missing source")
	}
	switch a.GetterMode {
	case "", ArtifactModeAny, ArtifactModeFile, ArtifactModeDir:
	default:
		add("artifact: mode %q: want any, file or dir", a.GetterMode)
	}
	if a.RelativeDest != "" {
		if err := CheckTaskRelativePath(a.RelativeDest); err != nil {
			add("artifact: destination: %w", err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a.GetterOptions)) {
		if !slices.Contains(artifactOptions, k) {
			add("artifact: option %q is not supported (supported: %s)", k, strings.Join(artifactOptions, ", "))
		}
	}
	if c, ok := a.GetterOptions["checksum"]; ok {
		typ, sum, found := strings.Cut(c, ":")
		if !found || sum == "" || !slices.Contains([]string{"md5", "sha1", "sha256", "sha512"}, typ) {
			add("artifact: checksum %q: want type:value with type md5, sha1, sha256 or sha512", c)
		}
	}
	return errors.Join(errs...)
}

// validateTaskFiles checks a task's template and artifact blocks.
func (t *Task) validateTaskFiles() error {
	var errs []error
	if len(t.Templates) > MaxTemplatesPerTask {
		errs = append(errs, fmt.Errorf("task %q: %d templates, over %d", t.Name, len(t.Templates), MaxTemplatesPerTask))
	}
	if len(t.Artifacts) > MaxArtifactsPerTask {
		errs = append(errs, fmt.Errorf("task %q: %d artifacts, over %d", t.Name, len(t.Artifacts), MaxArtifactsPerTask))
	}
	for _, tm := range t.Templates {
		if tm == nil {
			continue
		}
		if err := tm.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("task %q: %w", t.Name, err))
		}
	}
	for _, a := range t.Artifacts {
		if a == nil {
			continue
		}
		if err := a.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("task %q: %w", t.Name, err))
		}
	}
	return errors.Join(errs...)
}

// canonicalizeTaskFiles fills the templates' and artifacts' defaults.
func (t *Task) canonicalizeTaskFiles() {
	for _, tm := range t.Templates {
		if tm != nil {
			tm.Canonicalize()
		}
	}
	for _, a := range t.Artifacts {
		if a != nil {
			a.Canonicalize()
		}
	}
}
