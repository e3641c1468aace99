package allocrunner

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/droverhq/drover/structs"
)

// Dispatched jobs: the payload file and the meta variables.

// LocalDir is the task's own local directory, relative to its task dir
// (Nomad's `local/`).
const LocalDir = "local"

// writeDispatchPayload writes a dispatched job's payload to
// <task dir>/local/<file> for a task with a dispatch_payload block. The
// write goes through an os.Root at the task dir, so neither the file
// name nor a link in the task dir can send it elsewhere.
func writeDispatchPayload(job *structs.Job, task *structs.Task, taskDir string) error {
	if job == nil || task.DispatchPayload == nil || len(job.Payload) == 0 {
		return nil
	}
	if err := task.DispatchPayload.Validate(); err != nil { // checked at register; again, as it becomes a path
		return fmt.Errorf("task %q: %w", task.Name, err)
	}
	root, err := os.OpenRoot(taskDir)
	if err != nil {
		return fmt.Errorf("task %q: dispatch payload: %w", task.Name, err)
	}
	defer root.Close()
	name := path.Join(LocalDir, filepath.ToSlash(filepath.Clean(task.DispatchPayload.File)))
	if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return fmt.Errorf("task %q: dispatch payload dir: %w", task.Name, err)
	}
	// A FIFO or other special file the task left there goes: opening it
	// for writing would block.
	if fi, err := root.Lstat(name); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		if err := root.Remove(name); err != nil {
			return fmt.Errorf("task %q: dispatch payload: %w", task.Name, err)
		}
	}
	if err := root.WriteFile(name, job.Payload, 0o644); err != nil {
		return fmt.Errorf("task %q: dispatch payload: %w", task.Name, err)
	}
	return nil
}

// metaEnv is NOMAD_META_<key> and DROVER_META_<key> for the job's,
// group's and task's meta (the task's winning), each under its key as
// written and upper-cased, as Nomad sets them. Characters a variable
// name cannot hold become '_'.
func metaEnv(alloc *structs.Allocation, task *structs.Task) map[string]string {
	meta := map[string]string{}
	if j := alloc.Job; j != nil {
		maps.Copy(meta, j.Meta)
		if tg := j.LookupTaskGroup(alloc.TaskGroup); tg != nil {
			maps.Copy(meta, tg.Meta)
		}
	}
	maps.Copy(meta, task.Meta)
	out := make(map[string]string, 4*len(meta))
	for k, v := range meta {
		k = envName(k)
		for _, p := range envPrefixes {
			out[p+"META_"+k] = v
			out[p+"META_"+strings.ToUpper(k)] = v
		}
	}
	return out
}

// envName replaces what is not a letter, digit or '_' with '_'.
func envName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}
