package server

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestJobValidate: a reader may validate; an invalid job is an answer
// naming what is wrong, not a failed call; nothing is stored; a token
// without read-job is refused.
func TestJobValidate(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	validate := func(token string, job *structs.Job) (*structs.JobValidateResponse, error) {
		req := &structs.JobValidateRequest{Job: job}
		req.AuthToken = token
		var resp structs.JobValidateResponse
		return &resp, s.RPC(structs.RPCJobValidate, req, &resp)
	}
	reader := clientToken(t, s, mgmt, "reader", `namespace "default" { policy = "read" }`)
	resp, err := validate(reader.SecretID, gpuJob("ok", structs.JobTypeBatch, 1, 1))
	if err != nil || resp.Error != "" || len(resp.ValidationErrors) != 0 {
		t.Errorf("valid job: %+v, %v; want no errors", resp, err)
	}
	bad := gpuJob("bad", structs.JobTypeBatch, 1, 1)
	bad.TaskGroups[0].Tasks[0].Driver = ""
	resp, err = validate(reader.SecretID, bad)
	if err != nil || len(resp.ValidationErrors) == 0 || !strings.Contains(resp.Error, "driver") {
		t.Errorf("task without a driver: %+v, %v; want an error naming the driver", resp, err)
	}
	bad.TaskGroups[0].Tasks[0].Driver, bad.Namespace = "raw_exec", "missing"
	if resp, err := validate(mgmt, bad); err != nil || !strings.Contains(resp.Error, `"missing"`) {
		t.Errorf("job in a missing namespace: %+v, %v; want the reason in the reply", resp, err)
	}
	if j, err := s.State().JobByID(nil, structs.DefaultNamespace, "ok"); err != nil || j != nil {
		t.Errorf("validate stored %+v (%v)", j, err)
	}
	nobody := clientToken(t, s, mgmt, "nobody", `node { policy = "read" }`)
	if _, err := validate(nobody.SecretID, gpuJob("ok", structs.JobTypeBatch, 1, 1)); !isDenied(err) {
		t.Errorf("without read-job: %v, want permission denied", err)
	}
}
