package agent

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/droverhq/drover/client"
	"github.com/droverhq/drover/client/allocrunner"
	"github.com/droverhq/drover/structs"
)

// allocRestarter is what POST /v1/client/allocation/<id>/restart needs
// from the backend: the local client's in-place task restart.
type allocRestarter interface {
	RestartAlloc(allocID, task string) error
}

// AllocRestartResponse answers a restart: the allocation and the task
// asked for ("" for every running task).
type AllocRestartResponse struct {
	AllocID  string
	TaskName string
}

func (h *httpAPI) allocOpsRoutes(m *http.ServeMux) {
	m.HandleFunc("PUT /v1/allocation/{id}/stop", h.wrap(h.allocStop))
	m.HandleFunc("POST /v1/allocation/{id}/stop", h.wrap(h.allocStop))
	m.HandleFunc("PUT /v1/client/allocation/{id}/restart", h.wrap(h.allocRestart))
	m.HandleFunc("POST /v1/client/allocation/{id}/restart", h.wrap(h.allocRestart))
}

// fullAllocID resolves a unique allocation ID prefix through the
// server's state; without a server the ID is used as given.
func (h *httpAPI) fullAllocID(id string) (string, error) {
	s := h.b.State()
	if s == nil {
		return id, nil
	}
	a, err := resolve("allocation", id,
		func(id string) (*structs.Allocation, error) { return s.AllocByID(nil, id) },
		func(p string) ([]*structs.Allocation, error) { return s.AllocsByIDPrefix(nil, "*", p) },
		func(a *structs.Allocation) string { return a.ID })
	if err != nil {
		return "", err
	}
	return a.ID, nil
}

// allocStop stops an allocation; the scheduler replaces it.
func (h *httpAPI) allocStop(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	id, err := h.fullAllocID(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	req := &structs.AllocStopRequest{AllocID: id, WriteRequest: structs.WriteRequest{Region: o.Region, Namespace: o.Namespace}}
	var resp structs.AllocStopResponse
	if err := h.b.RPC(r.Context(), structs.RPCAllocStop, req, &resp); err != nil {
		return nil, err
	}
	setIndex(w, resp.Index)
	return &resp, nil
}

// allocRestart restarts a task of an allocation this agent's client
// runs, in place. The body {"TaskName": "..."} is optional.
func (h *httpAPI) allocRestart(w http.ResponseWriter, r *http.Request) (any, error) {
	restarter, ok := h.b.(allocRestarter)
	if !ok {
		return nil, errorf(http.StatusNotImplemented, "this agent cannot restart allocations")
	}
	var req structs.AllocRestartRequest
	if r.Body != nil {
		err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, errorf(http.StatusBadRequest, "request body is not valid JSON: %v", err)
		}
	}
	id, err := h.fullAllocID(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if err := restarter.RestartAlloc(id, req.TaskName); err != nil {
		return nil, restartError(err)
	}
	return &AllocRestartResponse{AllocID: id, TaskName: req.TaskName}, nil
}

// restartError gives the client's restart errors their HTTP status.
func restartError(err error) error {
	switch {
	case errors.Is(err, allocrunner.ErrUnknownTask), errors.Is(err, client.ErrUnknownAlloc):
		return errorf(http.StatusNotFound, "%v", err)
	case errors.Is(err, allocrunner.ErrTaskNotRunning):
		return errorf(http.StatusConflict, "%v", err)
	}
	return err
}

// RestartAlloc restarts a task of an allocation on this agent's client.
func (a *Agent) RestartAlloc(allocID, task string) error {
	if a.client == nil {
		return errorf(http.StatusNotImplemented, "this agent runs no client; ask the agent on the allocation's node")
	}
	return a.client.RestartAlloc(allocID, task)
}
