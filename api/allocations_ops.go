package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/droverhq/drover/structs"
)

// Stop stops an allocation (allocID may be a unique prefix); the servers
// replace it with a new one. It returns the evaluation that does.
func (a *Allocations) Stop(ctx context.Context, allocID string, w *WriteOptions) (*structs.AllocStopResponse, *WriteMeta, error) {
	var out structs.AllocStopResponse
	meta, err := a.c.write(ctx, http.MethodPut, "/v1/allocation/"+pathID(allocID)+"/stop", nil, &out, w, nil)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Restart restarts a task of an allocation in place (every running task
// when task is ""), without counting against its restart policy. Any
// agent reaches any allocation: the servers route the request to its node.
func (a *Allocations) Restart(ctx context.Context, allocID, task string, w *WriteOptions) (*WriteMeta, error) {
	body := &structs.AllocRestartRequest{TaskName: task}
	return a.c.write(ctx, http.MethodPut, "/v1/client/allocation/"+pathID(allocID)+"/restart", body, nil, w, nil)
}

// Signal sends signal (a name such as "SIGHUP") to a running task of an
// allocation, or to every running task when task is "".
func (a *Allocations) Signal(ctx context.Context, allocID, task, signal string) error {
	if signal == "" {
		return fmt.Errorf("signal allocation %s: no signal named", allocID)
	}
	body := struct{ Task, Signal string }{task, signal}
	_, err := a.c.write(ctx, http.MethodPut, "/v1/client/allocation/"+pathID(allocID)+"/signal", body, nil, nil, nil)
	return err
}
