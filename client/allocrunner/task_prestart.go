package allocrunner

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// Task events of the prestart hooks.
const (
	TaskArtifactDownloadFailed = "Failed Artifact Download"
	TaskDownloadingArtifacts   = "Downloading Artifacts"
	TaskTemplateFailed         = "Template Failed"
	TaskTemplateMissing        = "Template Missing Variable"
	TaskTemplateRerendered     = "Template Re-rendered"
)

// TaskFilesConfig is what the prestart hooks need: where templates read
// variables, and the bounds of artifact downloads.
type TaskFilesConfig struct {
	// Variables serves nomadVar and friends; nil refuses them.
	Variables VariableSource
	// Rendezvous serves the peers of gang and distributed allocations
	// (rendezvous.go); nil gives them no rendezvous variables.
	Rendezvous RendezvousSource
	// ArtifactMaxSize bounds one artifact's download (and unpacked
	// size), in bytes; 0 is DefaultArtifactMaxSize.
	ArtifactMaxSize int64
	// ArtifactTimeout bounds one artifact's download; 0 is
	// DefaultArtifactTimeout.
	ArtifactTimeout time.Duration
}

// VariableSource reads variables for a task of an allocation this client
// runs (the servers check that the task may read them). A read with
// minIndex > 0 blocks until the answer's index passes minIndex or wait
// ends.
type VariableSource interface {
	ReadVariable(ctx context.Context, allocID, task, path string, minIndex uint64, wait time.Duration) (*structs.VariableDecrypted, uint64, error)
	ListVariables(ctx context.Context, allocID, task, prefix string, minIndex uint64, wait time.Duration) ([]*structs.VariableDecrypted, uint64, error)
}

// prestart runs the task's prestart hooks before an attempt starts: it
// fetches the artifacts (once per task runner) and renders the templates,
// adding the env = true templates' variables to cfg. On failure it
// records why and returns ok false with the attempt's result: an error
// the same config would hit again fails the task at once (wrapped in
// drivers.ErrInvalidConfig); others go to the restart policy.
func (tr *taskRunner) prestart(cfg *drivers.TaskConfig) (res *drivers.ExitResult, wasKilled, ok bool) {
	if err := tr.rendezvous(cfg); err != nil { // rendezvous.go
		return tr.prestartFailed(TaskRendezvousFailed, err)
	}
	if len(tr.task.Artifacts) == 0 && len(tr.task.Templates) == 0 {
		return nil, false, true
	}
	ctx, cancel := tr.lifeContext()
	defer cancel()
	if err := tr.fetchArtifacts(ctx, cfg.TaskDir, cfg.Env); err != nil {
		return tr.prestartFailed(TaskArtifactDownloadFailed, err)
	}
	env, err := tr.renderTemplates(ctx, cfg)
	if err != nil {
		return tr.prestartFailed(TaskTemplateFailed, err)
	}
	if len(env) > 0 {
		mergeTemplateEnv(cfg.Env, env)
		cfg.Config = Runtime{Env: cfg.Env, Node: tr.ar.node}.Config(tr.task.Config) // the node values too
	}
	return nil, false, true
}

// mergeTemplateEnv adds an env = true template's variables to the
// task's env, except those the client owns there: the allocation's
// DROVER_*/NOMAD_* values, the GPU visibility variables (the NVIDIA
// container runtime honours NVIDIA_VISIBLE_DEVICES: "all" would expose
// every GPU of the node) and the MPS share limits, as TaskEnv keeps them
// from the env block.
func mergeTemplateEnv(dst, tmpl map[string]string) {
	for k, v := range tmpl {
		if _, set := dst[k]; (set || strings.HasPrefix(k, "CUDA_MPS_")) && clientOwnedEnv(k) {
			continue
		}
		dst[k] = v
	}
}

func clientOwnedEnv(k string) bool {
	switch {
	case k == EnvNvidiaVisibleDevices, k == EnvCUDAVisibleDevices, strings.HasPrefix(k, "CUDA_MPS_"):
		return true
	}
	for _, p := range envPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// prestartFailed records a failed hook, or the kill that cut it short.
func (tr *taskRunner) prestartFailed(event string, err error) (*drivers.ExitResult, bool, bool) {
	if tr.ar.isDetached() {
		return nil, true, false
	}
	if tr.killed() {
		tr.emit(&structs.TaskEvent{Type: structs.TaskKilled, Message: "Task killed while not running: " + tr.killReason}, tr.becomeDead(false))
		return nil, true, false
	}
	tr.logger.Warn("task prestart", "event", event, "error", err)
	tr.emit(&structs.TaskEvent{Type: event, Message: err.Error()}, nil)
	return &drivers.ExitResult{ExitCode: -1, Err: err}, false, false
}

// lifeContext is a context that ends when the task is killed, the
// runner detaches or the allocation is done.
func (tr *taskRunner) lifeContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-tr.killCh:
		case <-tr.ar.detachCh:
		case <-tr.ar.waitCh:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}

// unrecoverable marks err as one a restart would meet again: it matches
// drivers.ErrInvalidConfig and reads as err.
func unrecoverable(err error) error {
	if err == nil || errors.Is(err, drivers.ErrInvalidConfig) {
		return err
	}
	return &unrecoverableError{err}
}

type unrecoverableError struct{ err error }

func (e *unrecoverableError) Error() string   { return e.err.Error() }
func (e *unrecoverableError) Unwrap() []error { return []error{e.err, drivers.ErrInvalidConfig} }
