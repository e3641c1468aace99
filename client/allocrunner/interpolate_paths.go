package allocrunner

import (
	"maps"
	"path/filepath"
	"strings"

	"github.com/droverhq/drover/structs"
)

// Nomad interpolates a template's destination and an artifact's source,
// destination, options and headers at the client, against the task's
// env and the node (Runtime). Job files write task-relative paths with
// ${NOMAD_TASK_DIR} or ${NOMAD_SECRETS_DIR}: those become relative to
// the task dir again (the secrets dir is <task dir>/secrets here); any
// other absolute result stays absolute and is refused as before.

// taskPath interpolates p, a path relative to the task dir.
func (r Runtime) taskPath(p, taskDir string) string {
	env := maps.Clone(r.Env)
	if env == nil {
		env = map[string]string{}
	}
	for _, pre := range envPrefixes {
		env[pre+"SECRETS_DIR"] = filepath.Join(taskDir, "secrets")
	}
	out := Runtime{Env: env, Node: r.Node}.Interpolate(p)
	if out == taskDir {
		return "."
	}
	if rel, ok := strings.CutPrefix(out, taskDir+string(filepath.Separator)); ok {
		return rel
	}
	return out
}

// artifact returns a copy of a with its fields interpolated.
func (r Runtime) artifact(a *structs.TaskArtifact, taskDir string) *structs.TaskArtifact {
	out := a.Copy()
	out.GetterSource = r.Interpolate(a.GetterSource)
	if a.RelativeDest != "" {
		out.RelativeDest = r.taskPath(a.RelativeDest, taskDir)
	}
	for k, v := range a.GetterOptions {
		out.GetterOptions[k] = r.Interpolate(v)
	}
	for k, v := range a.GetterHeaders {
		out.GetterHeaders[k] = r.Interpolate(v)
	}
	return out
}
