package api

import (
	"context"
	"net/http"

	"github.com/droverhq/drover/structs"
)

// Deployments is the /v1/deployment(s) endpoints.
type Deployments struct{ c *Client }

// Deployments returns the deployments endpoints.
func (c *Client) Deployments() *Deployments { return &Deployments{c: c} }

// List returns the deployments, newest first.
func (d *Deployments) List(ctx context.Context, q *QueryOptions) ([]*structs.Deployment, *QueryMeta, error) {
	var out []*structs.Deployment
	meta, err := d.c.query(ctx, "/v1/deployments", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Info returns one deployment by ID (or a unique prefix).
func (d *Deployments) Info(ctx context.Context, id string, q *QueryOptions) (*structs.Deployment, *QueryMeta, error) {
	var out structs.Deployment
	meta, err := d.c.query(ctx, "/v1/deployment/"+pathID(id), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Allocations returns a deployment's allocations.
func (d *Deployments) Allocations(ctx context.Context, id string, q *QueryOptions) ([]*structs.AllocListStub, *QueryMeta, error) {
	var out []*structs.AllocListStub
	meta, err := d.c.query(ctx, "/v1/deployment/allocations/"+pathID(id), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

type deploymentBody struct {
	DeploymentID string
	All          bool     `json:",omitempty"`
	Groups       []string `json:",omitempty"`
	Pause        bool
}

func (d *Deployments) put(ctx context.Context, path string, body *deploymentBody, w *WriteOptions) (*structs.DeploymentUpdateResponse, error) {
	var out structs.DeploymentUpdateResponse
	if _, err := d.c.write(ctx, http.MethodPut, path, body, &out, w, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// Promote promotes the canaries of all groups (groups empty) or of those
// named.
func (d *Deployments) Promote(ctx context.Context, id string, groups []string, w *WriteOptions) (*structs.DeploymentUpdateResponse, error) {
	return d.put(ctx, "/v1/deployment/promote/"+pathID(id), &deploymentBody{DeploymentID: id, All: len(groups) == 0, Groups: groups}, w)
}

// Fail fails a deployment (rolling back when it has auto_revert).
func (d *Deployments) Fail(ctx context.Context, id string, w *WriteOptions) (*structs.DeploymentUpdateResponse, error) {
	return d.put(ctx, "/v1/deployment/fail/"+pathID(id), &deploymentBody{DeploymentID: id}, w)
}

// Pause pauses (pause true) or resumes a deployment.
func (d *Deployments) Pause(ctx context.Context, id string, pause bool, w *WriteOptions) (*structs.DeploymentUpdateResponse, error) {
	return d.put(ctx, "/v1/deployment/pause/"+pathID(id), &deploymentBody{DeploymentID: id, Pause: pause}, w)
}

// Deployments returns a job's deployments, newest first.
func (j *Jobs) Deployments(ctx context.Context, jobID string, q *QueryOptions) ([]*structs.Deployment, *QueryMeta, error) {
	var out []*structs.Deployment
	meta, err := j.c.query(ctx, "/v1/job/"+pathID(jobID)+"/deployments", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// LatestDeployment returns a job's newest deployment, or nil.
func (j *Jobs) LatestDeployment(ctx context.Context, jobID string, q *QueryOptions) (*structs.Deployment, *QueryMeta, error) {
	var out *structs.Deployment
	meta, err := j.c.query(ctx, "/v1/job/"+pathID(jobID)+"/deployment", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}
