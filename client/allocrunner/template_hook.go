package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/droverhq/drover/client/template"
	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// The template hook renders a task's templates before each attempt and,
// while the task runs, watches the variables they read: a change
// re-renders them and applies their change_mode (restart, signal, noop).

// templateWatchWait is how long one blocking read of a watched variable
// waits before it asks again.
var templateWatchWait = 5 * time.Minute

// templateRetryWait is the pause after a failed watch read.
var templateRetryWait = 2 * time.Second

// maxTemplateSource bounds a template read from a source file.
const maxTemplateSource = 1 << 20

// templateStates maps each *taskRunner with templates to its
// *templateState (kept off taskRunner, as restartRequests is).
var templateStates sync.Map

// templateState is what a task's templates depend on, and its watcher.
type templateState struct {
	mu       sync.Mutex
	paths    map[string]uint64 // variable path -> index last seen
	prefixes map[string]uint64
	watching bool
	// gen counts the watcher's re-renders that changed a file; rendered
	// is gen as the latest attempt's prestart render began: an attempt
	// with rendered >= gen started with every change.
	gen, rendered uint64
}

// varReader adapts the VariableSource to template.VarReader for one
// render, recording the index of each answer.
type varReader struct {
	src            VariableSource
	allocID, task  string
	paths, prefixs map[string]uint64
	mu             sync.Mutex
}

func (v *varReader) Read(ctx context.Context, path string) (*structs.VariableDecrypted, error) {
	out, idx, err := v.src.ReadVariable(ctx, v.allocID, v.task, path, 0, 0)
	v.mu.Lock()
	v.paths[path] = idx
	v.mu.Unlock()
	return out, err
}

func (v *varReader) List(ctx context.Context, prefix string) ([]*structs.VariableDecrypted, error) {
	out, idx, err := v.src.ListVariables(ctx, v.allocID, v.task, prefix, 0, 0)
	v.mu.Lock()
	v.prefixs[prefix] = idx
	v.mu.Unlock()
	return out, err
}

// renderTemplates renders every template into the task directory and
// returns the env = true templates' variables. A template that reads a
// variable that does not exist yet waits for it (recorded once as an
// event), as Nomad does. It starts the watcher after the first render.
func (tr *taskRunner) renderTemplates(ctx context.Context, cfg *drivers.TaskConfig) (map[string]string, error) {
	if len(tr.task.Templates) == 0 {
		return nil, nil
	}
	announced := ""
	for {
		st := tr.templateState()
		st.mu.Lock()
		gen := st.gen
		st.mu.Unlock()
		env, reads, _, err := tr.renderAll(ctx, cfg.TaskDir, cfg.Env)
		st.mu.Lock()
		st.rendered = max(st.rendered, gen)
		st.mu.Unlock()
		var missing string
		if errors.Is(err, template.ErrMissingVariable) {
			missing = strings.TrimSpace(strings.TrimPrefix(err.Error(), template.ErrMissingVariable.Error()))
		}
		if missing == "" {
			if err == nil {
				tr.startTemplateWatch(reads, cfg.TaskDir, cfg.Env)
			}
			return env, err
		}
		if missing != announced {
			announced = missing
			tr.emit(&structs.TaskEvent{Type: TaskTemplateMissing, Message: "Missing: nomadVar " + missing + "; waiting for it"}, nil)
		}
		path := strings.Trim(missing, `"`)
		if _, _, err := tr.ar.files.Variables.ReadVariable(ctx, tr.ar.id, tr.task.Name, path, reads.paths[path], templateWatchWait); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			select {
			case <-tr.ar.clock.After(templateRetryWait):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
}

// renderAll renders every template once and writes the files; changed
// lists the change modes (and signals) of the templates whose file
// changed.
func (tr *taskRunner) renderAll(ctx context.Context, taskDir string, env map[string]string) (map[string]string, *varReader, []*structs.Template, error) {
	var reader *varReader
	var vars template.VarReader
	if src := tr.ar.files.Variables; src != nil {
		reader = &varReader{src: src, allocID: tr.ar.id, task: tr.task.Name, paths: map[string]uint64{}, prefixs: map[string]uint64{}}
		vars = reader
	} else {
		reader = &varReader{paths: map[string]uint64{}, prefixs: map[string]uint64{}}
	}
	out := map[string]string{}
	var changed []*structs.Template
	for _, t := range tr.task.Templates {
		text := t.EmbeddedTmpl
		if t.SourcePath != "" {
			src := Runtime{Env: env, Node: tr.ar.node}.taskPath(t.SourcePath, taskDir)
			buf, err := template.ReadFile(taskDir, src, maxTemplateSource)
			if err != nil {
				return nil, reader, nil, unrecoverable(fmt.Errorf("template %s: source: %w", t.DestPath, err))
			}
			text = string(buf)
		}
		res, err := template.Render(ctx, template.Input{Template: t, Text: text, Env: env, Vars: vars})
		if errors.Is(err, template.ErrMissingVariable) {
			return nil, reader, nil, err
		}
		if err != nil {
			return nil, reader, nil, unrecoverable(fmt.Errorf("template %s: %w", t.DestPath, err))
		}
		perm, err := template.ParsePerms(t.Perms)
		if err != nil {
			return nil, reader, nil, unrecoverable(fmt.Errorf("template %s: %w", t.DestPath, err))
		}
		dest := Runtime{Env: env, Node: tr.ar.node}.taskPath(t.DestPath, taskDir) // interpolate_paths.go
		didChange, err := template.WriteFile(taskDir, dest, res.Output, perm)
		if err != nil {
			return nil, reader, nil, unrecoverable(fmt.Errorf("template %s: write: %w", t.DestPath, err))
		}
		if didChange {
			changed = append(changed, t)
		}
		if t.Envvars {
			kv, err := template.ParseEnv(res.Output)
			if err != nil {
				return nil, reader, nil, unrecoverable(fmt.Errorf("template %s: env: %w", t.DestPath, err))
			}
			for k, v := range kv {
				out[k] = v
			}
		}
	}
	return out, reader, changed, nil
}

// templateState is the task runner's template state, made on first use
// and dropped when the allocation is done.
func (tr *taskRunner) templateState() *templateState {
	v, loaded := templateStates.LoadOrStore(tr, &templateState{})
	if !loaded {
		go func() { <-tr.ar.waitCh; templateStates.CompareAndDelete(tr, v) }()
	}
	return v.(*templateState)
}

// startTemplateWatch records what the templates read and starts the
// task's watcher once.
func (tr *taskRunner) startTemplateWatch(reads *varReader, taskDir string, env map[string]string) {
	if tr.ar.files.Variables == nil || (len(reads.paths) == 0 && len(reads.prefixs) == 0) {
		return
	}
	st := tr.templateState()
	st.mu.Lock()
	st.paths, st.prefixes = reads.paths, reads.prefixs
	start := !st.watching
	st.watching = true
	st.mu.Unlock()
	if start {
		go tr.watchTemplates(st, taskDir, env)
	}
}

// watchTemplates re-renders on a change of a variable the templates
// read, until the task is killed or done or the runner detaches.
func (tr *taskRunner) watchTemplates(st *templateState, taskDir string, env map[string]string) {
	ctx, cancel := tr.lifeContext()
	defer cancel()
	defer func() {
		st.mu.Lock()
		st.watching = false
		st.mu.Unlock()
	}()
	for {
		if !tr.waitTemplateChange(ctx, st) {
			return
		}
		if d := tr.templateSplay(); d > 0 {
			select {
			case <-tr.ar.clock.After(d):
			case <-ctx.Done():
				return
			}
		}
		_, reads, changed, err := tr.renderAll(ctx, taskDir, env)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			tr.emit(&structs.TaskEvent{Type: TaskTemplateFailed, Message: "re-render: " + err.Error()}, nil)
		}
		st.mu.Lock()
		for p, idx := range reads.paths {
			st.paths[p] = idx
		}
		for p, idx := range reads.prefixs {
			st.prefixes[p] = idx
		}
		if len(changed) > 0 {
			st.gen++
		}
		gen := st.gen
		st.mu.Unlock()
		if len(changed) > 0 && !tr.applyChangeModes(ctx, st, gen, changed) {
			return
		}
	}
}

// templateSplay is a random wait up to the largest splay of the
// templates, so that many tasks do not restart at once.
func (tr *taskRunner) templateSplay() time.Duration {
	var most time.Duration
	for _, t := range tr.task.Templates {
		most = max(most, t.Splay)
	}
	if most <= 0 {
		return 0
	}
	return rand.N(most)
}

// waitTemplateChange blocks until a watched variable or prefix changes
// (true), or ctx ends (false).
func (tr *taskRunner) waitTemplateChange(ctx context.Context, st *templateState) bool {
	st.mu.Lock()
	paths, prefixes := copyIndexes(st.paths), copyIndexes(st.prefixes)
	st.mu.Unlock()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := make(chan struct{}, 1)
	var wg sync.WaitGroup
	watch := func(read func(context.Context, uint64) (uint64, error), from uint64) {
		defer wg.Done()
		for wctx.Err() == nil {
			idx, err := read(wctx, max(from, 1))
			switch {
			case wctx.Err() != nil:
				return
			case err != nil:
				select {
				case <-tr.ar.clock.After(templateRetryWait):
				case <-wctx.Done():
					return
				}
			case idx > from:
				select {
				case changed <- struct{}{}:
				default:
				}
				cancel()
				return
			}
		}
	}
	src, alloc, task := tr.ar.files.Variables, tr.ar.id, tr.task.Name
	for p, from := range paths {
		wg.Add(1)
		go watch(func(ctx context.Context, min uint64) (uint64, error) {
			_, idx, err := src.ReadVariable(ctx, alloc, task, p, min, templateWatchWait)
			return idx, err
		}, from)
	}
	for p, from := range prefixes {
		wg.Add(1)
		go watch(func(ctx context.Context, min uint64) (uint64, error) {
			_, idx, err := src.ListVariables(ctx, alloc, task, p, min, templateWatchWait)
			return idx, err
		}, from)
	}
	wg.Wait()
	select {
	case <-changed:
		return ctx.Err() == nil
	default:
		return false
	}
}

func copyIndexes(m map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// templateApplyRetry is how often a change that found the task not
// running (started with the old files, not yet marked running) is tried
// again.
var templateApplyRetry = 50 * time.Millisecond

// applyChangeModes acts on re-rendered templates: a restart wins over
// signals; noop only rewrote the file. A task not running yet gets the
// change once it runs, unless an attempt that rendered after the change
// (gen) started meanwhile or the task is dead. It returns false when ctx
// ended.
func (tr *taskRunner) applyChangeModes(ctx context.Context, st *templateState, gen uint64, changed []*structs.Template) bool {
	var dests []string
	signals := map[string]bool{}
	restart := false
	for _, t := range changed {
		dests = append(dests, t.DestPath)
		switch t.ChangeMode {
		case structs.TemplateChangeModeRestart, "":
			restart = true
		case structs.TemplateChangeModeSignal:
			signals[strings.ToUpper(t.ChangeSignal)] = true
		}
	}
	if !restart && len(signals) == 0 {
		tr.emit(&structs.TaskEvent{Type: TaskTemplateRerendered, Message: "Template re-rendered: " + strings.Join(dests, ", ")}, nil)
		return true
	}
	msg := "Template re-rendered: " + strings.Join(dests, ", ")
	tr.emit(&structs.TaskEvent{Type: TaskTemplateRerendered, Message: msg}, nil)
	for {
		err := tr.applyOnce(restart, signals, msg)
		if !errors.Is(err, ErrTaskNotRunning) {
			return true
		}
		st.mu.Lock()
		current := st.rendered >= gen
		st.mu.Unlock()
		if current || tr.state() == structs.TaskStateDead {
			return true
		}
		select {
		case <-tr.ar.clock.After(templateApplyRetry):
		case <-ctx.Done():
			return false
		}
	}
}

// applyOnce requests the restart or sends the signals; ErrTaskNotRunning
// when the task does not run now.
func (tr *taskRunner) applyOnce(restart bool, signals map[string]bool, msg string) error {
	if restart {
		err := tr.requestRestart(msg)
		if err != nil && !errors.Is(err, ErrTaskNotRunning) {
			tr.logger.Warn("template restart", "error", err)
		}
		return err
	}
	for sig := range signals {
		if err := tr.ar.SignalTask(tr.task.Name, sig); err != nil {
			if errors.Is(err, ErrTaskNotRunning) {
				return err
			}
			tr.logger.Warn("template signal", "signal", sig, "error", err)
		}
	}
	return nil
}
