package agent

import (
	"net/http"
	"strconv"

	"github.com/droverhq/drover/structs"
)

// jobVersions serves GET /v1/job/<id>/versions[?diffs=true].
func (h *httpAPI) jobVersions(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	diffs := false
	if v := r.URL.Query().Get("diffs"); v != "" {
		if diffs, err = strconv.ParseBool(v); err != nil {
			return nil, errorf(http.StatusBadRequest, "diffs %q: not a boolean", v)
		}
	}
	var reply structs.JobVersionsResponse
	args := &structs.JobVersionsRequest{JobID: r.PathValue("id"), Diffs: diffs, QueryOptions: o}
	if err := h.read(w, r, structs.RPCJobVersions, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return &struct {
		Versions []*structs.Job
		Diffs    []*structs.JobDiff
	}{orEmpty(reply.Versions), reply.Diffs}, nil
}

// jobVersionRead serves GET /v1/job/<id>?version=N: one stored version.
func (h *httpAPI) jobVersionRead(w http.ResponseWriter, r *http.Request, raw string) (any, error) {
	version, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "version %q: not a number", raw)
	}
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.JobVersionsResponse
	args := &structs.JobVersionsRequest{JobID: r.PathValue("id"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCJobVersions, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	for _, v := range reply.Versions {
		if v.Version == version {
			return v, nil
		}
	}
	return nil, errorf(http.StatusNotFound, "job %q has no version %d", args.JobID, version)
}

// jobRevertBody is the body of PUT /v1/job/<id>/revert (Nomad's).
type jobRevertBody struct {
	JobID               string
	JobVersion          uint64
	EnforcePriorVersion *uint64
	// ConsulToken and VaultToken are accepted and unused, as Nomad's
	// clients send them empty.
	ConsulToken, VaultToken string
}

func (h *httpAPI) jobRevert(w http.ResponseWriter, r *http.Request) (any, error) {
	var body jobRevertBody
	if err := h.decodeBody(r, &body); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := bodyIDMatches("job ID", body.JobID, id); err != nil {
		return nil, err
	}
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	req := &structs.JobRevertRequest{
		JobID: id, JobVersion: body.JobVersion, EnforcePriorVersion: body.EnforcePriorVersion,
		WriteRequest: structs.WriteRequest{Region: o.Region, Namespace: o.Namespace},
	}
	var resp structs.JobRegisterResponse
	if err := h.write(w, r, structs.RPCJobRevert, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	return &resp, nil
}

// jobStableBody is the body of PUT /v1/job/<id>/stable (Nomad's).
type jobStableBody struct {
	JobID      string
	JobVersion uint64
	Stable     bool
}

func (h *httpAPI) jobStable(w http.ResponseWriter, r *http.Request) (any, error) {
	var body jobStableBody
	if err := h.decodeBody(r, &body); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := bodyIDMatches("job ID", body.JobID, id); err != nil {
		return nil, err
	}
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	req := &structs.JobStabilityRequest{
		JobID: id, JobVersion: body.JobVersion, Stable: body.Stable,
		WriteRequest: structs.WriteRequest{Region: o.Region, Namespace: o.Namespace},
	}
	var resp structs.JobStabilityResponse
	if err := h.write(w, r, structs.RPCJobStable, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	return &resp, nil
}

// routeDeploy adds the routes of job versions and deployments.
func (h *httpAPI) routeDeploy(m *routeMux) {
	m.HandleFunc("GET /v1/job/{id}/versions", h.wrap(h.jobVersions))
	m.HandleFunc("PUT /v1/job/{id}/revert", h.wrap(h.jobRevert))
	m.HandleFunc("POST /v1/job/{id}/revert", h.wrap(h.jobRevert))
	m.HandleFunc("PUT /v1/job/{id}/stable", h.wrap(h.jobStable))
	m.HandleFunc("POST /v1/job/{id}/stable", h.wrap(h.jobStable))
	h.routeDeployments(m) // http_deployments.go
}
