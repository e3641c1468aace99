package docker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/moby/moby/client"

	"github.com/droverhq/drover/drivers"
)

var (
	_ drivers.OrphanKiller = (*Driver)(nil)
	_ drivers.TaskKiller   = (*Driver)(nil)
)

// KillOrphans implements drivers.OrphanKiller: it force-removes every
// container (running or not) labelled with an alloc dir directly under
// allocRoot (LabelAllocDir) whose task ID (LabelTaskID) is not in keep.
// Containers of other clients on the same engine have other alloc dirs
// and are left alone, as are containers without the label. It returns
// the task IDs of the containers that were running.
func (d *Driver) KillOrphans(ctx context.Context, allocRoot string, keep map[string]bool) ([]string, error) {
	if d.apiErr != nil {
		return nil, d.apiErr
	}
	root := filepath.Clean(allocRoot)
	list, err := d.api.ContainerList(ctx, client.ContainerListOptions{
		All: true, Filters: client.Filters{}.Add("label", LabelAllocDir),
	})
	if err != nil {
		return nil, fmt.Errorf("docker: find orphans: %w", err)
	}
	var killed []string
	var errs []error
	for _, c := range list.Items {
		dir, id := c.Labels[LabelAllocDir], c.Labels[LabelTaskID]
		if !filepath.IsAbs(dir) || filepath.Dir(filepath.Clean(dir)) != root || keep[id] {
			continue
		}
		if err := d.removeContainerCtx(ctx, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("docker: orphan %s: %w", id, err))
			continue
		}
		if c.State == "running" || c.State == "paused" || c.State == "restarting" {
			killed = append(killed, id)
			d.logger.Warn("killed orphaned task", "task_id", id, "container_id", shortID(c.ID))
		}
	}
	return killed, errors.Join(errs...)
}

// KillTask implements drivers.TaskKiller: it force-removes the
// container the handle names; one already gone is fine.
func (d *Driver) KillTask(ctx context.Context, h *drivers.TaskHandle) error {
	if d.apiErr != nil {
		return d.apiErr
	}
	if h == nil || h.State[StateContainerID] == "" {
		return fmt.Errorf("%w: handle has no %s", drivers.ErrInvalidConfig, StateContainerID)
	}
	if err := d.removeContainerCtx(ctx, h.State[StateContainerID]); err != nil {
		return fmt.Errorf("kill %s: %w", h.ID, err)
	}
	return nil
}
