package fsm

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// deploymentRecord holds one deployment in a snapshot (70-79: versions
// and deployments); never renumber.
const deploymentRecord recordType = 71

// deploymentStillCurrent reports whether d's job is still at d's
// version: an auto-revert decided for d must not overwrite a job
// registered since (it is that job's registration, not d's, that runs).
func deploymentStillCurrent(tx *state.Txn, d *structs.Deployment) (bool, error) {
	cur, err := tx.JobByID(d.Namespace, d.JobID)
	if err != nil {
		return false, err
	}
	return cur != nil && cur.Version == d.JobVersion && cur.CreateIndex == d.JobCreateIndex, nil
}

// applyDeploymentStatusUpdate changes a deployment's status, and with
// it registers a job (auto-revert), marks its version stable (success)
// and stores an evaluation.
func (f *FSM) applyDeploymentStatusUpdate(buf []byte, index uint64) any {
	var req structs.DeploymentStatusUpdateRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode deployment status update: %w", err)
	}
	s := f.State()
	evals := evalList(req.Eval)
	err := s.Write(index, func(tx *state.Txn) error {
		u := req.DeploymentUpdate
		if u == nil {
			return fmt.Errorf("deployment status update: missing update: %w", structs.ErrInvalid)
		}
		d, err := tx.DeploymentByID(u.DeploymentID)
		if err != nil {
			return err
		}
		if d == nil {
			return structs.KindErrorf(structs.ErrNotFound, "deployment %q not found", u.DeploymentID)
		}
		if !d.Active() {
			// Decided on a deployment that ended before this entry
			// applied (a user's fail racing the watcher, say): a stale
			// decision changes nothing.
			evals = nil
			return nil
		}
		if err := tx.UpdateDeploymentStatus(u, 0); err != nil {
			return err
		}
		if req.MarkStable {
			if err := tx.UpdateJobStability(d.Namespace, d.JobID, d.JobVersion, true); err != nil {
				return err
			}
		}
		if req.Job != nil {
			revert, err := deploymentStillCurrent(tx, d)
			if err != nil {
				return err
			}
			if !revert {
				evals = nil
				return nil
			}
			if err := tx.UpsertJob(req.Job); err != nil {
				return err
			}
		}
		return tx.UpsertEvals(evals)
	})
	if err != nil {
		return err
	}
	f.evalsUpserted(s, evals)
	return nil
}

// applyDeploymentPromote promotes canaries, with the evaluation that
// replaces the old allocations.
func (f *FSM) applyDeploymentPromote(buf []byte, index uint64) any {
	var req structs.DeploymentPromoteRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode deployment promote: %w", err)
	}
	s := f.State()
	evals := evalList(req.Eval)
	err := s.Write(index, func(tx *state.Txn) error {
		if err := tx.PromoteDeployment(req.DeploymentID, req.All, req.Groups, req.PromotedAt); err != nil {
			return err
		}
		return tx.UpsertEvals(evals)
	})
	if err != nil {
		return err
	}
	f.evalsUpserted(s, evals)
	return nil
}

// persistDeployments writes every deployment.
func (s *fsmSnapshot) persistDeployments(rec func(recordType, any) error) error {
	all, err := s.snap.Deployments(nil, "*", "")
	if err != nil {
		return err
	}
	return writeAll(rec, deploymentRecord, all)
}

func restoreDeployment(r *state.StateRestore, dec *codec.Decoder) error {
	var d structs.Deployment
	if err := dec.Decode(&d); err != nil {
		return fmt.Errorf("deployment: %w", err)
	}
	if d.TaskGroups == nil {
		d.TaskGroups = map[string]*structs.DeploymentState{}
	}
	for _, s := range d.TaskGroups {
		if s != nil && !s.RequireProgressBy.IsZero() {
			s.RequireProgressBy = s.RequireProgressBy.UTC()
		}
	}
	return r.DeploymentRestore(&d)
}

// Event types of the Deployment topic (Nomad's).
const (
	typeDeploymentStatusUpdate = "DeploymentStatusUpdate"
	typeDeploymentPromotion    = "DeploymentPromotion"
	typeDeploymentAllocHealth  = "DeploymentAllocHealth"
)

// deploymentEvents is the event of a deployment an entry of type t
// wrote: its status changed, its canaries were promoted, or its counts
// moved with an allocation's health.
func deploymentEvents(t structs.MessageType, c memdb.Change) []structs.Event {
	if c.Deleted() {
		return nil
	}
	d := c.After.(*structs.Deployment)
	typ := typeDeploymentStatusUpdate
	switch t {
	case structs.DeploymentPromoteRequestType:
		typ = typeDeploymentPromotion
	case structs.AllocClientUpdateRequestType:
		typ = typeDeploymentAllocHealth
	}
	ns := d.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	return []structs.Event{{Topic: structs.TopicDeployment, Type: typ, Key: d.ID, Namespace: ns,
		FilterKeys: []string{d.JobID}, Payload: map[string]any{"Deployment": d}}}
}
