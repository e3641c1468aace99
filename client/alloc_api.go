package client

import (
	"fmt"

	"github.com/droverhq/drover/structs"
)

// ErrUnknownAlloc is returned (wrapped) for an allocation this client
// does not run.
var ErrUnknownAlloc = fmt.Errorf("client: unknown allocation: %w", structs.ErrNotFound)

// RestartAlloc restarts a running task of an allocation in place (every
// running task when task is ""), without counting against the group's
// restart policy; the task records a Restart Signaled event. Errors wrap
// ErrUnknownAlloc, allocrunner.ErrUnknownTask or
// allocrunner.ErrTaskNotRunning.
func (c *Client) RestartAlloc(allocID, task string) error {
	c.allocMu.Lock()
	r := c.runners[allocID]
	c.allocMu.Unlock()
	if r == nil {
		return fmt.Errorf("restart allocation %s: %w", allocID, ErrUnknownAlloc)
	}
	return r.ar.RestartTask(task, "")
}
