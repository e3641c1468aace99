package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/droverhq/drover/client/allocrunner"
	"github.com/droverhq/drover/structs"
)

// maxCheckpointJobsPerGC bounds the job dirs one GC pass looks at.
const maxCheckpointJobsPerGC = 4 * structs.MaxJobsExist

// checkpointJob is a job's checkpoint dir under the root, with the job
// its marker names.
type checkpointJob struct {
	dir string
	ref structs.JobRef
}

// collectCheckpoints removes the checkpoint dirs (allocrunner/checkpoint.go)
// of jobs the servers no longer hold: a job's dir outlives its
// allocations, restarts, reschedules and updates, and goes once the job
// is purged. Only dirs this client marked as a job's are looked at, and
// a job the servers cannot answer for is kept. It returns how many dirs
// it removed.
func (c *Client) collectCheckpoints(ctx context.Context) int {
	root := c.checkpointRoot()
	if root == "" {
		return 0
	}
	trash := filepath.Join(root, checkpointTrash)
	if err := os.RemoveAll(trash); err != nil {
		c.logger.Warn("checkpoint gc: emptying the trash", "path", trash, "error", err)
	}
	jobs := findCheckpointJobs(root, maxCheckpointJobsPerGC)
	removed := 0
	for len(jobs) > 0 && ctx.Err() == nil {
		batch := jobs[:min(len(jobs), structs.MaxJobsExist)]
		jobs = jobs[len(batch):]
		req := &structs.NodeJobsExistRequest{
			NodeID: c.NodeID(), SecretID: c.Node().SecretID,
			QueryOptions: structs.QueryOptions{Region: c.cfg.Region},
		}
		for _, j := range batch {
			req.Jobs = append(req.Jobs, j.ref)
		}
		var resp structs.NodeJobsExistResponse
		if err := c.rpc.call(ctx, structs.RPCNodeJobsExist, req, &resp); err != nil {
			c.logger.Warn("checkpoint gc: asking the servers which jobs exist", "error", err)
			return removed
		}
		if len(resp.Exists) != len(batch) {
			c.logger.Warn("checkpoint gc: answer does not match the question", "asked", len(batch), "answered", len(resp.Exists))
			return removed
		}
		for i, j := range batch {
			if resp.Exists[i] {
				continue
			}
			if err := c.removeCheckpointJob(root, j); err != nil {
				c.logger.Warn("checkpoint gc: removing a purged job's dir", "path", j.dir, "error", err)
				continue
			}
			c.logger.Info("checkpoint gc: removed a purged job's checkpoints", "namespace", j.ref.Namespace, "job_id", j.ref.JobID, "path", j.dir)
			removed++
		}
	}
	return removed
}

// checkpointTrash is the dir under the checkpoint root that purged jobs'
// dirs are moved to before they are removed. Its leading dot keeps it
// apart from every namespace dir (CheckpointComponent escapes a leading
// dot).
const checkpointTrash = ".drover-gc"

// errJobRunning is a purged job's dir kept because an allocation of a
// job of the same name runs here (it was registered again).
var errJobRunning = errors.New("an allocation of the job runs on this client")

// removeCheckpointJob removes a purged job's dir, unless this client runs
// an allocation of a job of that name: under allocMu, which a new
// allocation's runner is added under before it makes its dir, the dir is
// moved to the trash, then removed outside the lock. So a job registered
// again after the servers answered keeps the dir its tasks use.
func (c *Client) removeCheckpointJob(root string, j checkpointJob) error {
	trash := filepath.Join(root, checkpointTrash)
	if err := os.MkdirAll(trash, 0o700); err != nil {
		return err
	}
	gone, err := os.MkdirTemp(trash, "job-")
	if err != nil {
		return err
	}
	c.allocMu.Lock()
	if c.jobRunsLocked(j.ref) {
		c.allocMu.Unlock()
		return errJobRunning
	}
	err = os.Rename(j.dir, filepath.Join(gone, "dir"))
	c.allocMu.Unlock()
	if err != nil {
		return err
	}
	return os.RemoveAll(gone)
}

// jobRunsLocked says whether a runner of an allocation of the job has
// not finished; allocMu is held.
func (c *Client) jobRunsLocked(ref structs.JobRef) bool {
	for _, r := range c.runners {
		a := r.ar.Alloc()
		ns := a.Namespace
		if ns == "" {
			ns = structs.DefaultNamespace
		}
		if ns != ref.Namespace || a.JobID != ref.JobID {
			continue
		}
		select {
		case <-r.ar.WaitCh():
		default:
			return true
		}
	}
	return false
}

// findCheckpointJobs lists the job dirs under root (<root>/<ns>/<job>)
// that hold a job marker naming the job whose dir it is, at most limit.
func findCheckpointJobs(root string, limit int) []checkpointJob {
	var out []checkpointJob
	nss, _ := os.ReadDir(root)
	for _, ns := range nss {
		if !ns.IsDir() {
			continue
		}
		jobs, _ := os.ReadDir(filepath.Join(root, ns.Name()))
		for _, j := range jobs {
			if len(out) >= limit {
				return out
			}
			dir := filepath.Join(root, ns.Name(), j.Name())
			ref, err := readCheckpointMarker(dir)
			if err != nil || !j.IsDir() {
				continue
			}
			out = append(out, checkpointJob{dir: dir, ref: ref})
		}
	}
	return out
}

// maxMarkerSize bounds a job marker.
const maxMarkerSize = 4096

// readCheckpointMarker reads a job dir's marker and checks that the dir
// is the one the job it names has (a marker copied elsewhere does not
// make the client remove another dir).
func readCheckpointMarker(dir string) (structs.JobRef, error) {
	var ref structs.JobRef
	f, err := os.Open(filepath.Join(dir, allocrunner.CheckpointJobMarker))
	if err != nil {
		return ref, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxMarkerSize+1))
	f.Close()
	if err != nil {
		return ref, fmt.Errorf("checkpoint marker %s: %w", dir, err)
	}
	if len(b) > maxMarkerSize {
		return ref, fmt.Errorf("checkpoint marker %s: too large", dir)
	}
	var m allocrunner.CheckpointJob
	if err := json.Unmarshal(b, &m); err != nil {
		return ref, fmt.Errorf("checkpoint marker %s: %w", dir, err)
	}
	if filepath.Base(dir) != structs.CheckpointComponent(m.JobID) ||
		filepath.Base(filepath.Dir(dir)) != structs.CheckpointComponent(m.Namespace) {
		return ref, fmt.Errorf("checkpoint marker %s: names job %s/%s of another dir", dir, m.Namespace, m.JobID)
	}
	return structs.JobRef{Namespace: m.Namespace, JobID: m.JobID}, nil
}
