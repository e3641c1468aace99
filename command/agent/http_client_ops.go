package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/droverhq/drover/structs"
)

// Client operations: the servers route each to the client that runs the
// allocation (or to the node named), over the connection that client
// keeps to them, so any agent reaches any task (structs/client_ops.go).

func (h *httpAPI) clientOpsRoutes(m *routeMux) {
	m.HandleFunc("PUT /v1/allocation/{id}/stop", h.wrap(h.allocStop))
	m.HandleFunc("POST /v1/allocation/{id}/stop", h.wrap(h.allocStop))
	m.HandleFunc("PUT /v1/client/allocation/{id}/restart", h.wrap(h.allocRestart))
	m.HandleFunc("POST /v1/client/allocation/{id}/restart", h.wrap(h.allocRestart))
	m.HandleFunc("PUT /v1/client/allocation/{id}/signal", h.wrap(h.allocSignal))
	m.HandleFunc("POST /v1/client/allocation/{id}/signal", h.wrap(h.allocSignal))
	m.HandleFunc("GET /v1/client/allocation/{id}/stats", h.wrap(h.allocStats))
	m.HandleFunc("GET /v1/client/stats", h.wrap(h.nodeStats))
	m.HandleFunc("PUT /v1/client/gpu/{id}/health", h.wrap(h.gpuHealth))
	m.HandleFunc("POST /v1/client/gpu/{id}/health", h.wrap(h.gpuHealth))
	m.HandleFunc("GET /v1/client/fs/logs/{alloc}", h.logs)
	m.HandleFunc("GET /v1/client/fs/ls/{alloc}", h.wrap(h.fsList))
	m.HandleFunc("GET /v1/client/fs/stat/{alloc}", h.wrap(h.fsStat))
	m.HandleFunc("GET /v1/client/fs/cat/{alloc}", h.fsRead)
	m.HandleFunc("GET /v1/client/fs/readat/{alloc}", h.fsRead)
	m.HandleFunc("GET /v1/client/allocation/{id}/exec", h.allocExec)
	h.gpuHistoryRoutes(m)                                                        // http_gpu_history.go
	m.HandleFunc("GET /v1/client/allocation/{id}/checks", h.wrap(h.allocChecks)) // http_services.go
}

// clientCall runs a unary client operation and decodes its reply.
func (h *httpAPI) clientCall(r *http.Request, method string, args, reply any) error {
	conn, err := h.stream(r, method, args)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(clientCallTimeout))
	if err := structs.ReadStreamMsg(conn, reply); err != nil {
		return fmt.Errorf("%s: read reply: %w (%v)", method, structs.ErrUnavailable, err)
	}
	return nil
}

// clientCallTimeout bounds reading a unary client operation's reply once
// the node accepted it.
const clientCallTimeout = time.Minute

// allocStop stops an allocation; the scheduler replaces it.
func (h *httpAPI) allocStop(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	alloc, err := h.lookupAlloc(r, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	req := &structs.AllocStopRequest{AllocID: alloc.ID, WriteRequest: structs.WriteRequest{Region: o.Region, Namespace: alloc.Namespace}}
	var resp structs.AllocStopResponse
	if err := h.write(w, r, structs.RPCAllocStop, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	return &resp, nil
}

// AllocRestartResponse answers a restart: the allocation and the task
// asked for ("" for every running task).
type AllocRestartResponse struct {
	AllocID  string
	TaskName string
}

// optionalBody decodes a JSON body into out when there is one.
func optionalBody(w http.ResponseWriter, r *http.Request, out any) error {
	if r.Body == nil {
		return nil
	}
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(out)
	if err != nil && !errors.Is(err, io.EOF) {
		return errorf(http.StatusBadRequest, "request body is not valid JSON: %v", err)
	}
	return nil
}

// allocRestart restarts a task of an allocation in place. The body
// {"TaskName": "..."} is optional (Nomad's AllocRestartRequest).
func (h *httpAPI) allocRestart(w http.ResponseWriter, r *http.Request) (any, error) {
	var body struct{ TaskName string }
	if err := optionalBody(w, r, &body); err != nil {
		return nil, err
	}
	alloc, err := h.lookupAlloc(r, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	var reply structs.GenericResponse
	args := &structs.ClientAllocRequest{AllocID: alloc.ID, Task: body.TaskName}
	if err := h.clientCall(r, structs.RPCClientAllocRestart, args, &reply); err != nil {
		return nil, err
	}
	return &AllocRestartResponse{AllocID: alloc.ID, TaskName: body.TaskName}, nil
}

// allocSignal sends a signal to a task of an allocation (Nomad's
// AllocSignalRequest: {"Task": "...", "Signal": "SIGHUP"}).
func (h *httpAPI) allocSignal(w http.ResponseWriter, r *http.Request) (any, error) {
	var body struct{ Task, Signal string }
	if err := optionalBody(w, r, &body); err != nil {
		return nil, err
	}
	if body.Signal == "" {
		return nil, errorf(http.StatusBadRequest, "signal: Signal is required")
	}
	alloc, err := h.lookupAlloc(r, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	var reply structs.GenericResponse
	args := &structs.ClientAllocRequest{AllocID: alloc.ID, Task: body.Task, Signal: body.Signal}
	if err := h.clientCall(r, structs.RPCClientAllocSignal, args, &reply); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// allocStats answers the usage of the GPUs an allocation holds.
func (h *httpAPI) allocStats(w http.ResponseWriter, r *http.Request) (any, error) {
	alloc, err := h.lookupAlloc(r, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	var reply structs.AllocStats
	if err := h.clientCall(r, structs.RPCClientAllocStats, &structs.ClientAllocRequest{AllocID: alloc.ID}, &reply); err != nil {
		return nil, err
	}
	reply.Devices = orEmpty(reply.Devices)
	return &reply, nil
}

// targetNode is the node a node operation is for: ?node_id= (an ID or
// unique prefix), else this agent's own client's node.
func (h *httpAPI) targetNode(r *http.Request) (string, error) {
	id := r.URL.Query().Get("node_id")
	if id == "" {
		if id = h.b.LocalNodeID(); id == "" {
			return "", errorf(http.StatusBadRequest, "node_id is required: this agent runs no client")
		}
		return id, nil
	}
	o, err := parseQuery(r)
	if err != nil {
		return "", err
	}
	o.MinQueryIndex = 0
	var reply structs.SingleNodeResponse
	if err := h.rpc(r, structs.RPCNodeGetNode, &structs.NodeSpecificRequest{NodeID: id, QueryOptions: o}, &reply); err != nil {
		return "", err
	}
	return reply.Node.ID, nil
}

// nodeStats answers the usage of a node: host and GPUs.
func (h *httpAPI) nodeStats(w http.ResponseWriter, r *http.Request) (any, error) {
	nodeID, err := h.targetNode(r)
	if err != nil {
		return nil, err
	}
	var reply structs.NodeStats
	if err := h.clientCall(r, structs.RPCClientNodeStats, &structs.ClientNodeRequest{NodeID: nodeID}, &reply); err != nil {
		return nil, err
	}
	reply.Devices = orEmpty(reply.Devices)
	return &reply, nil
}

// GPUHealthRequest is the body of PUT /v1/client/gpu/<uuid>/health.
type GPUHealthRequest struct {
	Healthy bool
	Reason  string
}

// gpuHealth marks a simulated GPU unhealthy (an injected fault) or
// healthy again, on the node of ?node_id= or this agent's; the client
// re-registers its node so the servers replace the allocations holding
// it.
func (h *httpAPI) gpuHealth(w http.ResponseWriter, r *http.Request) (any, error) {
	var body GPUHealthRequest
	if err := h.decodeBody(r, &body); err != nil {
		return nil, err
	}
	nodeID, err := h.targetNode(r)
	if err != nil {
		return nil, err
	}
	args := &structs.ClientGPUHealthRequest{NodeID: nodeID, DeviceID: r.PathValue("id"), Healthy: body.Healthy, Reason: body.Reason}
	var reply structs.GPUHealthResponse
	if err := h.clientCall(r, structs.RPCClientGPUHealth, args, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// fsRequest reads ?path=, ?offset= and ?limit= for an allocation.
func (h *httpAPI) fsRequest(r *http.Request) (*structs.ClientFSRequest, error) {
	q := r.URL.Query()
	req := &structs.ClientFSRequest{Path: q.Get("path")}
	if req.Path == "" {
		req.Path = "/"
	}
	for name, dst := range map[string]*int64{"offset": &req.Offset, "limit": &req.Limit} {
		if v := q.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return nil, errorf(http.StatusBadRequest, "%s %q must be a non-negative number", name, v)
			}
			*dst = n
		}
	}
	alloc, err := h.lookupAlloc(r, r.PathValue("alloc"))
	if err != nil {
		return nil, err
	}
	req.AllocID = alloc.ID
	return req, nil
}

// fsList answers the entries of a directory of the allocation
// (Nomad's []AllocFileInfo).
func (h *httpAPI) fsList(w http.ResponseWriter, r *http.Request) (any, error) {
	req, err := h.fsRequest(r)
	if err != nil {
		return nil, err
	}
	var reply []*structs.AllocFileInfo
	if err := h.clientCall(r, structs.RPCClientFSList, req, &reply); err != nil {
		return nil, err
	}
	return orEmpty(reply), nil
}

// fsStat answers one AllocFileInfo.
func (h *httpAPI) fsStat(w http.ResponseWriter, r *http.Request) (any, error) {
	req, err := h.fsRequest(r)
	if err != nil {
		return nil, err
	}
	var reply structs.AllocFileInfo
	if err := h.clientCall(r, structs.RPCClientFSStat, req, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// fsRead answers a file's bytes (cat: all of it; readat: ?offset and
// ?limit) as application/octet-stream.
func (h *httpAPI) fsRead(w http.ResponseWriter, r *http.Request) {
	req, err := h.fsRequest(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	conn, err := h.stream(r, structs.RPCClientFSReadAt, req)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	defer conn.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	h.copyStream(w, r, conn, func(m *structs.StreamMsg) []byte { return m.Data })
}

// copyStream writes what each message of a client operation carries
// (pick) to w until the operation ends. An error after the answer began
// cannot change its status: it is logged and the body cut short.
func (h *httpAPI) copyStream(w http.ResponseWriter, r *http.Request, conn io.Reader, pick func(*structs.StreamMsg) []byte) {
	flusher, _ := w.(http.Flusher)
	for {
		var m structs.StreamMsg
		if err := structs.ReadStreamMsg(conn, &m); err != nil {
			if !errors.Is(err, io.EOF) && r.Context().Err() == nil {
				h.logger.Debug("http: client operation stream", "path", r.URL.Path, "error", err)
			}
			return
		}
		if m.Error != "" {
			h.logger.Warn("http: client operation failed", "path", r.URL.Path, "error", structs.DecodeRPCErrorText(m.Error))
			return
		}
		if b := pick(&m); len(b) > 0 {
			if _, err := w.Write(b); err != nil {
				return
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}
