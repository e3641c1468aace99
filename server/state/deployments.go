package state

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// TableDeployments holds deployments (structs/deployment.go). Their
// counts (placed, healthy, unhealthy) follow the allocations: a plan's
// placements and the clients' health reports update them in the same
// transaction.
const TableDeployments = "deployments"

func deploymentsTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableDeployments, Indexes: map[string]*memdb.IndexSchema{
		indexID:  idIndex("ID"),
		indexJob: namespacedIndex(indexJob, "JobID", false),
	}}
}

// newestFirst orders deployments by CreateIndex, newest first.
func newestFirst(a, b *structs.Deployment) int {
	return cmp.Or(cmp.Compare(b.CreateIndex, a.CreateIndex), cmp.Compare(a.ID, b.ID))
}

// DeploymentByID returns a deployment, or nil.
func (s *StateStore) DeploymentByID(ws memdb.WatchSet, id string) (*structs.Deployment, error) {
	return first[*structs.Deployment](ws, s.db.Txn(false), TableDeployments, indexID, id)
}

// Deployments returns the deployments of namespace ("" or "*": all)
// whose ID starts with prefix, newest first.
func (s *StateStore) Deployments(ws memdb.WatchSet, namespace, prefix string) ([]*structs.Deployment, error) {
	iter, err := s.db.Txn(false).Get(TableDeployments, indexID+"_prefix", prefix)
	if err != nil {
		return nil, fmt.Errorf("list deployments: %w", err)
	}
	keep := func(d *structs.Deployment) bool { return allNamespaces(namespace) || d.Namespace == namespace }
	return collect(ws, iter, keep, newestFirst), nil
}

// DeploymentsByJob returns a job's deployments, newest first.
func (s *StateStore) DeploymentsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Deployment, error) {
	return deploymentsByJobTxn(ws, s.db.Txn(false), namespace, jobID)
}

func deploymentsByJobTxn(ws memdb.WatchSet, txn *memdb.Txn, namespace, jobID string) ([]*structs.Deployment, error) {
	iter, err := txn.Get(TableDeployments, indexJob, namespaceOf(namespace), jobID)
	if err != nil {
		return nil, fmt.Errorf("deployments of job %q: %w", jobID, err)
	}
	return collect(ws, iter, nil, newestFirst), nil
}

// LatestDeploymentByJob returns a job's newest deployment, or nil.
func (s *StateStore) LatestDeploymentByJob(ws memdb.WatchSet, namespace, jobID string) (*structs.Deployment, error) {
	all, err := s.DeploymentsByJob(ws, namespace, jobID)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	return all[0], nil
}

// DeploymentByIDTxn returns a deployment as the transaction sees it.
func (tx *Txn) DeploymentByID(id string) (*structs.Deployment, error) {
	return first[*structs.Deployment](nil, tx.txn, TableDeployments, indexID, id)
}

// UpsertDeployment stores a deployment (a copy), keeping the
// CreateIndex of the one it replaces.
func (tx *Txn) UpsertDeployment(d *structs.Deployment) error {
	if d == nil || d.ID == "" || d.JobID == "" {
		return fmt.Errorf("upsert deployment: missing ID or job: %w", structs.ErrInvalid)
	}
	existing, err := tx.DeploymentByID(d.ID)
	if err != nil {
		return err
	}
	c := d.Copy()
	c.Namespace = namespaceOf(c.Namespace)
	c.CreateIndex, c.ModifyIndex = tx.index, tx.index
	if existing != nil {
		c.CreateIndex = existing.CreateIndex
	}
	if c.TaskGroups == nil {
		c.TaskGroups = map[string]*structs.DeploymentState{}
	}
	if err := tx.putDeployment(c); err != nil {
		return err
	}
	if existing != nil {
		return nil
	}
	return tx.pruneDeployments(c.Namespace, c.JobID)
}

// pruneDeployments keeps a job's newest structs.JobTrackedVersions
// deployments and those still active.
func (tx *Txn) pruneDeployments(namespace, jobID string) error {
	all, err := deploymentsByJobTxn(nil, tx.txn, namespace, jobID)
	if err != nil {
		return err
	}
	for i := structs.JobTrackedVersions; i < len(all); i++ {
		if all[i].Active() {
			continue
		}
		if err := tx.txn.Delete(TableDeployments, all[i]); err != nil {
			return fmt.Errorf("drop deployment %q: %w", all[i].ID, err)
		}
	}
	return nil
}

// deleteJobDeployments drops a purged job's deployments.
func (tx *Txn) deleteJobDeployments(namespace, jobID string) error {
	n, err := tx.txn.DeleteAll(TableDeployments, indexJob, namespaceOf(namespace), jobID)
	if err != nil {
		return fmt.Errorf("drop deployments of job %q: %w", jobID, err)
	}
	if n == 0 {
		return nil
	}
	return setIndex(tx.txn, TableDeployments, tx.index)
}

func (tx *Txn) putDeployment(d *structs.Deployment) error {
	d.ModifyIndex = tx.index
	if err := tx.txn.Insert(TableDeployments, d); err != nil {
		return fmt.Errorf("store deployment %q: %w", d.ID, err)
	}
	return setIndex(tx.txn, TableDeployments, tx.index)
}

// ApplyPlanDeployments writes a plan's deployment and the status
// changes of older ones, in the plan's transaction, before its
// allocations, so that their placements count in it.
func (tx *Txn) ApplyPlanDeployments(req *structs.ApplyPlanResultsRequest) error {
	for _, u := range req.DeploymentUpdates {
		if err := tx.UpdateDeploymentStatus(u, 0); err != nil {
			return err
		}
	}
	if req.Deployment != nil {
		return tx.UpsertDeployment(req.Deployment)
	}
	return nil
}

// UpdateDeploymentStatus sets a deployment's status. An unknown
// deployment is structs.ErrNotFound; a terminal one keeps its status.
func (tx *Txn) UpdateDeploymentStatus(u *structs.DeploymentStatusUpdate, at int64) error {
	if u == nil {
		return fmt.Errorf("deployment status: missing update: %w", structs.ErrInvalid)
	}
	d, err := tx.DeploymentByID(u.DeploymentID)
	if err != nil {
		return err
	}
	if d == nil {
		return structs.KindErrorf(structs.ErrNotFound, "deployment %q not found", u.DeploymentID)
	}
	if !d.Active() {
		return nil
	}
	c := d.Copy()
	c.Status, c.StatusDescription = u.Status, u.StatusDescription
	if at != 0 {
		c.ModifyTime = at
	}
	return tx.putDeployment(c)
}

// PromoteDeployment promotes the canaries of all groups of a running
// deployment, or of those named; a named group without canaries is
// structs.ErrInvalid.
func (tx *Txn) PromoteDeployment(id string, all bool, groups []string, at int64) error {
	d, err := tx.DeploymentByID(id)
	if err != nil {
		return err
	}
	if d == nil {
		return structs.KindErrorf(structs.ErrNotFound, "deployment %q not found", id)
	}
	if !d.Active() {
		return structs.KindErrorf(structs.ErrInvalid, "can't promote terminal deployment")
	}
	c := d.Copy()
	for name, s := range c.TaskGroups {
		if !all && !slices.Contains(groups, name) {
			continue
		}
		if s.DesiredCanaries > 0 {
			s.Promoted = true
			if s.ProgressDeadline > 0 && at > 0 {
				s.RequireProgressBy = time.Unix(0, at).Add(s.ProgressDeadline).UTC()
			}
		}
	}
	for _, g := range groups {
		if s := c.TaskGroups[g]; s == nil || s.DesiredCanaries == 0 {
			return structs.KindErrorf(structs.ErrInvalid, "deployment %q has no canaries in group %q", id, g)
		}
	}
	if c.Status == structs.DeploymentStatusRunning {
		c.StatusDescription = structs.DeploymentDescRunning
	}
	return tx.putDeployment(c)
}

// countDeploymentPlacements adds newly placed allocations (those not in
// state before) to their deployments' counts.
func (tx *Txn) countDeploymentPlacements(placed []*structs.Allocation) error {
	for _, a := range placed {
		if a == nil || a.DeploymentID == "" {
			continue
		}
		d, err := tx.DeploymentByID(a.DeploymentID)
		if err != nil || d == nil {
			return err
		}
		c := d.Copy()
		s := c.TaskGroups[a.TaskGroup]
		if s == nil {
			continue
		}
		s.PlacedAllocs++
		if a.DeploymentStatus.IsCanary() && !slices.Contains(s.PlacedCanaries, a.ID) {
			s.PlacedCanaries = append(s.PlacedCanaries, a.ID)
		}
		if err := tx.putDeployment(c); err != nil {
			return err
		}
	}
	return nil
}

// countDeploymentHealth adds an allocation whose health the client just
// decided to its deployment's counts; a healthy one moves the group's
// progress deadline to its report's time plus the deadline.
func (tx *Txn) countDeploymentHealth(before, after *structs.Allocation) error {
	if after.DeploymentID == "" || before.DeploymentStatus.IsHealthy() || before.DeploymentStatus.IsUnhealthy() {
		return nil
	}
	st := after.DeploymentStatus
	if !st.IsHealthy() && !st.IsUnhealthy() {
		return nil
	}
	d, err := tx.DeploymentByID(after.DeploymentID)
	if err != nil || d == nil {
		return err
	}
	c := d.Copy()
	s := c.TaskGroups[after.TaskGroup]
	if s == nil {
		return nil
	}
	if st.IsHealthy() {
		s.HealthyAllocs++
		if s.ProgressDeadline > 0 && !st.Timestamp.IsZero() {
			s.RequireProgressBy = st.Timestamp.Add(s.ProgressDeadline).UTC()
		}
	} else {
		s.UnhealthyAllocs++
	}
	return tx.putDeployment(c)
}

// mergeDeploymentHealth takes the client's decision on an allocation's
// health, once: a decided health never changes.
func mergeDeploymentHealth(a, update *structs.Allocation) {
	u := update.DeploymentStatus
	if u == nil || u.Healthy == nil || a.DeploymentID == "" {
		return
	}
	if a.DeploymentStatus.IsHealthy() || a.DeploymentStatus.IsUnhealthy() {
		return
	}
	s := a.DeploymentStatus.Copy()
	if s == nil {
		s = &structs.AllocDeploymentStatus{}
	}
	h := *u.Healthy
	s.Healthy, s.Timestamp = &h, u.Timestamp
	if s.Timestamp.IsZero() {
		s.Timestamp = time.Unix(0, update.ModifyTime).UTC()
	}
	a.DeploymentStatus = s
}

// DeploymentRestore inserts a deployment.
func (r *StateRestore) DeploymentRestore(d *structs.Deployment) error {
	return r.insert(TableDeployments, d.ID, d)
}
