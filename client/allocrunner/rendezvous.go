package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// TaskRendezvousFailed is the task event of a rendezvous that did not
// complete (rank 0 never placed, or the servers refused).
const TaskRendezvousFailed = "Rendezvous Failed"

// RendezvousTimeout bounds how long a task waits for rank 0 (and, for
// mpi, every rank) to be placed before the attempt fails.
const RendezvousTimeout = 10 * time.Minute

// rendezvousWait is one blocking query's wait.
const rendezvousWait = 30 * time.Second

// RendezvousSource reads the peers of a gang or distributed allocation
// this client runs; a read with minIndex > 0 blocks until the answer's
// index passes it or wait ends.
type RendezvousSource interface {
	Peers(ctx context.Context, allocID string, minIndex uint64, wait time.Duration) (*structs.RendezvousResponse, error)
}

// rendezvous adds the rendezvous variables to cfg for an allocation of a
// gang or distributed group, waiting (bounded, ended by a kill) until
// its master is placed, and writes the MPI hostfile.
func (tr *taskRunner) rendezvous(cfg *drivers.TaskConfig) error {
	ar := tr.ar
	ar.mu.Lock()
	alloc := ar.alloc
	ar.mu.Unlock()
	if alloc.Job == nil || ar.files.Rendezvous == nil {
		return nil
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil || !tg.Rendezvous() {
		return nil
	}
	if !tg.HasRendezvousPort() {
		// A gang registered before gangs got a rendezvous port: its
		// allocations have none, so rank 0 never shows an address.
		// It runs as it did, without the variables.
		ar.logger.Warn("rendezvous: group has no rendezvous port (registered before it existed; submit the job again for the variables)", "group", tg.Name)
		return nil
	}
	life, cancel := tr.lifeContext()
	defer cancel()
	ctx, stop := context.WithTimeout(life, RendezvousTimeout)
	defer stop()
	r, err := awaitRendezvous(ctx, ar.files.Rendezvous, alloc, tg)
	if err != nil {
		return err
	}
	env := r.Env(ar.allocDir)
	if path, ok := env[EnvHostfile]; ok {
		if err := writeHostfile(path, r.Hostfile()); err != nil {
			return err
		}
	}
	maps.Copy(cfg.Env, env)
	rt := Runtime{Env: cfg.Env, Node: ar.node}
	// The task's env block may name the rendezvous variables too.
	for k, v := range tr.task.Env {
		if _, own := env[k]; !own && !clientOwnedEnv(k) && strings.Contains(v, "${") {
			cfg.Env[k] = rt.Interpolate(v)
		}
	}
	cfg.Config = rt.Config(tr.task.Config)
	return nil
}

// writeHostfile writes the MPI hostfile into the allocation's shared
// dir, which its tasks can write: through a new file renamed over path,
// so that a symlink a task planted at path is replaced, never followed
// (the client runs as root).
func writeHostfile(path, content string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".hostfile-*")
	if err != nil {
		return fmt.Errorf("write hostfile: %w", err)
	}
	tmp := f.Name()
	_, err = f.WriteString(content)
	err = errors.Join(err, f.Chmod(0o644), f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write hostfile: %w", err)
	}
	return nil
}

// awaitRendezvous asks the servers for the group's peers until the
// rendezvous is ready or ctx ends.
func awaitRendezvous(ctx context.Context, src RendezvousSource, alloc *structs.Allocation, tg *structs.TaskGroup) (*Rendezvous, error) {
	var index uint64
	for {
		resp, err := src.Peers(ctx, alloc.ID, index, rendezvousWait)
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("rendezvous: rank 0 of group %q not placed: %w", tg.Name, context.Cause(ctx))
		case err != nil && errors.Is(err, structs.ErrPermissionDenied):
			return nil, fmt.Errorf("rendezvous: %w", err)
		case err != nil:
			sleepCtx(ctx, time.Second) // a server away: ask again (ctx ends it)
			continue
		}
		r, err := NewRendezvous(alloc, tg, resp.Count, resp.Peers)
		if err != nil {
			return nil, fmt.Errorf("rendezvous: %w", err)
		}
		if r.Ready() {
			if r.Addrs[0].HostIP == "" {
				return nil, fmt.Errorf("rendezvous: rank 0's node has no network address")
			}
			return r, nil
		}
		index = resp.Index
	}
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
