package agent

import (
	"net/http"
	"strconv"

	"github.com/droverhq/drover/structs"
)

// Deployments' HTTP API (Nomad's paths and shapes): decode, call the
// Deployment endpoint, encode.

func (h *httpAPI) deploymentsList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.DeploymentListResponse
	if err := h.read(w, r, structs.RPCDeploymentList, &structs.DeploymentListRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Deployments), nil
}

func (h *httpAPI) deploymentRead(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.SingleDeploymentResponse
	args := &structs.DeploymentSpecificRequest{DeploymentID: r.PathValue("id"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCDeploymentGet, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return reply.Deployment, nil
}

func (h *httpAPI) deploymentAllocs(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.DeploymentAllocationsResponse
	args := &structs.DeploymentSpecificRequest{DeploymentID: r.PathValue("id"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCDeploymentAllocations, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Allocations), nil
}

// deploymentWriteBody is the body of the deployment writes (Nomad's
// DeploymentPromoteRequest, DeploymentPauseRequest, DeploymentFailRequest).
type deploymentWriteBody struct {
	DeploymentID string
	All          bool
	Groups       []string
	Pause        bool
}

// deploymentWrite decodes a write's body (optional for fail) and checks
// its ID against the path's.
func (h *httpAPI) deploymentWrite(r *http.Request, bodyRequired bool) (*deploymentWriteBody, structs.WriteRequest, error) {
	var body deploymentWriteBody
	if bodyRequired || (r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody) {
		if err := h.decodeBody(r, &body); err != nil {
			return nil, structs.WriteRequest{}, err
		}
	}
	id := r.PathValue("id")
	if err := bodyIDMatches("deployment ID", body.DeploymentID, id); err != nil {
		return nil, structs.WriteRequest{}, err
	}
	body.DeploymentID = id
	o, err := parseQuery(r)
	if err != nil {
		return nil, structs.WriteRequest{}, err
	}
	return &body, structs.WriteRequest{Region: o.Region, Namespace: o.Namespace}, nil
}

func (h *httpAPI) deploymentPromote(w http.ResponseWriter, r *http.Request) (any, error) {
	body, wr, err := h.deploymentWrite(r, true)
	if err != nil {
		return nil, err
	}
	if len(body.Groups) > 1000 {
		return nil, errorf(http.StatusBadRequest, "Groups: at most 1000")
	}
	req := &structs.DeploymentPromoteRequest{DeploymentID: body.DeploymentID, All: body.All, Groups: body.Groups, WriteRequest: wr}
	var resp structs.DeploymentUpdateResponse
	if err := h.write(w, r, structs.RPCDeploymentPromote, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	return &resp, nil
}

func (h *httpAPI) deploymentFail(w http.ResponseWriter, r *http.Request) (any, error) {
	body, wr, err := h.deploymentWrite(r, false)
	if err != nil {
		return nil, err
	}
	req := &structs.DeploymentFailRequest{DeploymentID: body.DeploymentID, WriteRequest: wr}
	var resp structs.DeploymentUpdateResponse
	if err := h.write(w, r, structs.RPCDeploymentFail, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	return &resp, nil
}

func (h *httpAPI) deploymentPause(w http.ResponseWriter, r *http.Request) (any, error) {
	body, wr, err := h.deploymentWrite(r, true)
	if err != nil {
		return nil, err
	}
	req := &structs.DeploymentPauseRequest{DeploymentID: body.DeploymentID, Pause: body.Pause, WriteRequest: wr}
	var resp structs.DeploymentUpdateResponse
	if err := h.write(w, r, structs.RPCDeploymentPause, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	return &resp, nil
}

func (h *httpAPI) jobDeployments(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	all := false
	if v := r.URL.Query().Get("all"); v != "" {
		if all, err = strconv.ParseBool(v); err != nil {
			return nil, errorf(http.StatusBadRequest, "all %q: not a boolean", v)
		}
	}
	var reply structs.DeploymentListResponse
	args := &structs.JobDeploymentsRequest{JobID: r.PathValue("id"), All: all, QueryOptions: o}
	if err := h.read(w, r, structs.RPCJobDeployments, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Deployments), nil
}

func (h *httpAPI) jobLatestDeployment(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.SingleDeploymentResponse
	args := &structs.JobDeploymentsRequest{JobID: r.PathValue("id"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCJobLatestDeployment, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return reply.Deployment, nil
}

// routeDeployments adds the deployments' routes.
func (h *httpAPI) routeDeployments(m *routeMux) {
	m.HandleFunc("GET /v1/deployments", h.wrap(h.deploymentsList))
	m.HandleFunc("GET /v1/deployment/{id}", h.wrap(h.deploymentRead))
	m.HandleFunc("GET /v1/deployment/allocations/{id}", h.wrap(h.deploymentAllocs))
	for _, method := range []string{"PUT", "POST"} {
		m.HandleFunc(method+" /v1/deployment/promote/{id}", h.wrap(h.deploymentPromote))
		m.HandleFunc(method+" /v1/deployment/fail/{id}", h.wrap(h.deploymentFail))
		m.HandleFunc(method+" /v1/deployment/pause/{id}", h.wrap(h.deploymentPause))
	}
	m.HandleFunc("GET /v1/job/{id}/deployments", h.wrap(h.jobDeployments))
	m.HandleFunc("GET /v1/job/{id}/deployment", h.wrap(h.jobLatestDeployment))
}
