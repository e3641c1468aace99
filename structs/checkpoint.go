package structs

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Environment variables a task of a group with a checkpoint block gets
// (client/allocrunner/checkpoint.go).
const (
	// EnvCheckpointDir is the task's checkpoint directory as the task
	// sees it.
	EnvCheckpointDir = "DROVER_CHECKPOINT_DIR"
	// EnvRestartCount is how many times the task was restarted in its
	// allocation.
	EnvRestartCount = "DROVER_RESTART_COUNT"
	// EnvResumed is "1" when the checkpoint directory held files when
	// the task started: it resumes from an earlier run.
	EnvResumed = "DROVER_RESUMED"
)

// MaxCheckpointKeep bounds a checkpoint block's keep.
const MaxCheckpointKeep = 1000

// CheckpointConfig is a group's checkpoint block (Drover's extension,
// `group { checkpoint { path = "/ckpt"  keep = 3 } }`): each task gets a
// directory per job, group and rank (the allocation's name index) under
// the client's checkpoint_root, kept across restarts, reschedules,
// preemption and job updates.
type CheckpointConfig struct {
	// Path is where a task with its own view of the filesystem (docker,
	// exec) sees the directory; "" is the host path. raw_exec tasks
	// always get the host path.
	Path string `json:",omitempty"`
	// Keep, when above 0, is how many of the newest entries of the
	// directory the client keeps after each task exit.
	Keep int `json:",omitempty"`
}

// Copy returns a copy of c.
func (c *CheckpointConfig) Copy() *CheckpointConfig {
	if c == nil {
		return nil
	}
	cp := *c
	return &cp
}

// Validate checks the block.
func (c *CheckpointConfig) Validate() error {
	if c == nil {
		return nil
	}
	var errs []error
	if c.Path != "" {
		switch {
		case !filepath.IsAbs(c.Path):
			errs = append(errs, fmt.Errorf("checkpoint path %q must be absolute", c.Path))
		case filepath.Clean(c.Path) != c.Path || c.Path == "/":
			errs = append(errs, fmt.Errorf("checkpoint path %q must be clean and not /", c.Path))
		case len(c.Path) > 1024:
			errs = append(errs, errors.New("checkpoint path is longer than 1024 bytes"))
		}
	}
	if c.Keep < 0 || c.Keep > MaxCheckpointKeep {
		errs = append(errs, fmt.Errorf("checkpoint keep %d must be between 0 and %d", c.Keep, MaxCheckpointKeep))
	}
	return errors.Join(errs...)
}

// CheckpointDir is the checkpoint directory of one rank of a job's
// group under root. Each name becomes one path component: escaped so
// that no "/" or ".." can leave root (see CheckpointComponent).
func CheckpointDir(root, namespace, jobID, group string, rank int) (string, error) {
	if !filepath.IsAbs(root) {
		return "", fmt.Errorf("checkpoint root %q is not absolute", root)
	}
	if rank < 0 {
		return "", fmt.Errorf("checkpoint rank %d is negative", rank)
	}
	if namespace == "" {
		namespace = DefaultNamespace
	}
	parts := []string{filepath.Clean(root)}
	for _, n := range []string{namespace, jobID, group} {
		if n == "" {
			return "", errors.New("checkpoint dir: empty namespace, job or group name")
		}
		parts = append(parts, CheckpointComponent(n))
	}
	parts = append(parts, strconv.Itoa(rank))
	return filepath.Join(parts...), nil
}

// CheckpointComponent escapes a name into one safe path component:
// "%", "/" and "\" and NUL are percent-escaped, and a name that is "."
// or ".." (or starts with a dot) gets its leading dot escaped, so the
// result never names a parent, the same dir or a hidden file.
func CheckpointComponent(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '%' || c == '/' || c == '\\' || c == 0 || (i == 0 && c == '.'):
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// RPCNodeJobsExist asks which of some jobs still exist: a client's GC
// removes the checkpoint dirs of purged jobs (client/checkpoint_gc.go).
const RPCNodeJobsExist = "Node.JobsExist"

// MaxJobsExist bounds the jobs of one JobsExist request.
const MaxJobsExist = 256

// JobRef names a job.
type JobRef struct {
	Namespace string
	JobID     string
}

// NodeJobsExistRequest is a node's JobsExist call, with its secret.
type NodeJobsExistRequest struct {
	NodeID   string
	SecretID string
	Jobs     []JobRef
	QueryOptions
}

// NodeJobsExistResponse says, for each job of the request in order,
// whether the servers still hold it (a stopped job that is not purged
// does).
type NodeJobsExistResponse struct {
	Exists []bool
	QueryMeta
}
