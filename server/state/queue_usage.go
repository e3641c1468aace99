package state

import (
	"fmt"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// Derived tables of fair-share queues, kept like TableUsage: never written
// by the FSM directly, updated in the same transactions as the
// allocations, evaluations, jobs and nodes they follow, and rebuilt by a
// restore (rebuildQueueUsage). They let the scheduler read every queue's
// usage and the cluster's GPU count in a few lookups.
//
// TableQueueUsage holds one queueRow per queue with anything to count:
// the GPUs its live allocations hold, how many of its jobs wait, how many
// jobs name it.
//
// TableQueueWaiting holds one waitingJob per job with at least one
// blocked evaluation: the queue it counts in and how many of its
// evaluations are blocked. A job counts as waiting in its queue while
// that number is above 0; blocked evaluations of a job that is not in
// state count nowhere.
//
// TableClusterGPUs holds one row: the healthy GPU instances of ready,
// eligible nodes.
const (
	TableQueueUsage   = "queue_usage"
	TableQueueWaiting = "queue_waiting"
	TableClusterGPUs  = "cluster_gpus"
)

// queueRow is a queue's derived usage. Rows are immutable once inserted.
type queueRow struct {
	Queue string
	// GPUCompute is the GPUs held in percent of one GPU
	// (structs.WholeGPU each), so that slices add up exactly.
	GPUCompute int64
	Waiting    int
	Jobs       int
}

func (r *queueRow) empty() bool { return r.GPUCompute == 0 && r.Waiting == 0 && r.Jobs == 0 }

// waitingJob records that a job has blocked evaluations. Rows are
// immutable once inserted.
type waitingJob struct {
	Namespace string
	JobID     string
	Queue     string
	Blocked   int
}

// clusterGPUsRow is the single row of TableClusterGPUs.
type clusterGPUsRow struct {
	ID   string
	GPUs int
}

const clusterGPUsRowID = "cluster"

func queueUsageTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableQueueUsage, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex("Queue"),
	}}
}

func queueWaitingTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableQueueWaiting, Indexes: map[string]*memdb.IndexSchema{
		indexID: namespacedIndex(indexID, "JobID", true),
	}}
}

func clusterGPUsTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableClusterGPUs, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex("ID"),
	}}
}

// QueueUsage returns the usage of every queue that holds GPUs, has jobs
// waiting or is named by a job, keyed by queue name; a queue not in the
// map holds nothing and has nothing waiting. One read of a small table.
func (s *StateStore) QueueUsage() (map[string]structs.QueueUsage, error) {
	rows, err := queueRows(nil, s.db.Txn(false))
	if err != nil {
		return nil, err
	}
	out := make(map[string]structs.QueueUsage, len(rows))
	for _, r := range rows {
		out[r.Queue] = r.usage()
	}
	return out, nil
}

// ClusterGPUs returns the number of healthy GPU instances on ready,
// eligible nodes: what fair shares divide. One lookup.
func (s *StateStore) ClusterGPUs() (int, error) {
	return clusterGPUs(nil, s.db.Txn(false))
}

// QueueStatuses returns the queues whose name starts with prefix, sorted
// by name, each with its usage, job count and fair share (computed over
// all queues), all read in one transaction.
func (s *StateStore) QueueStatuses(ws memdb.WatchSet, prefix string) ([]*structs.QueueStatus, error) {
	all, err := queueStatuses(ws, s.db.Txn(false))
	if err != nil {
		return nil, err
	}
	out := make([]*structs.QueueStatus, 0, len(all))
	for _, st := range all {
		if strings.HasPrefix(st.Queue.Name, prefix) {
			out = append(out, st)
		}
	}
	return out, nil
}

// QueueStatus returns one queue with its usage and fair share, or nil
// when there is no queue of that name.
func (s *StateStore) QueueStatus(ws memdb.WatchSet, name string) (*structs.QueueStatus, error) {
	all, err := queueStatuses(ws, s.db.Txn(false))
	if err != nil {
		return nil, err
	}
	for _, st := range all {
		if st.Queue.Name == name {
			return st, nil
		}
	}
	return nil, nil
}

func queueStatuses(ws memdb.WatchSet, txn *memdb.Txn) ([]*structs.QueueStatus, error) {
	qs, err := queues(ws, txn)
	if err != nil {
		return nil, err
	}
	rows, err := queueRows(ws, txn)
	if err != nil {
		return nil, err
	}
	gpus, err := clusterGPUs(ws, txn)
	if err != nil {
		return nil, err
	}
	usage := make(map[string]structs.QueueUsage, len(rows))
	jobs := make(map[string]int, len(rows))
	for _, r := range rows {
		usage[r.Queue], jobs[r.Queue] = r.usage(), r.Jobs
	}
	return structs.QueueStatuses(qs, usage, jobs, gpus), nil
}

func (r *queueRow) usage() structs.QueueUsage {
	return structs.QueueUsage{Queue: r.Queue, GPUs: float64(r.GPUCompute) / structs.WholeGPU, Waiting: r.Waiting}
}

func queueRows(ws memdb.WatchSet, txn *memdb.Txn) ([]*queueRow, error) {
	iter, err := txn.Get(TableQueueUsage, indexID)
	if err != nil {
		return nil, fmt.Errorf("read queue usage: %w", err)
	}
	return collect(ws, iter, nil, func(a, b *queueRow) int { return strings.Compare(a.Queue, b.Queue) }), nil
}

func clusterGPUs(ws memdb.WatchSet, txn *memdb.Txn) (int, error) {
	row, err := first[*clusterGPUsRow](ws, txn, TableClusterGPUs, indexID, clusterGPUsRowID)
	if err != nil || row == nil {
		return 0, err
	}
	return row.GPUs, nil
}

func queueRowOf(txn *memdb.Txn, queue string) (*queueRow, error) {
	return first[*queueRow](nil, txn, TableQueueUsage, indexID, queue)
}

// updateQueueRow applies change to a copy of the queue's row (a new one
// when it has none) and writes it, or removes it once it counts nothing.
func updateQueueRow(txn *memdb.Txn, queue string, change func(r *queueRow)) error {
	row, err := queueRowOf(txn, queue)
	if err != nil {
		return err
	}
	next := &queueRow{Queue: queue}
	if row != nil {
		c := *row
		next = &c
	}
	change(next)
	switch {
	case !next.empty():
		err = txn.Insert(TableQueueUsage, next)
	case row != nil:
		err = txn.Delete(TableQueueUsage, row)
	}
	if err != nil {
		return fmt.Errorf("update usage of queue %q: %w", queue, err)
	}
	return nil
}

// allocQueue is the queue an allocation counts in: its job's.
func allocQueue(a *structs.Allocation) string {
	if a.Job == nil {
		return structs.DefaultQueue
	}
	return structs.QueueName(a.Job.Queue)
}

// allocGPUCompute is the GPUs a holds, in percent of one GPU: a whole GPU
// is structs.WholeGPU, a slice its compute share.
func allocGPUCompute(a *structs.Allocation) int64 {
	return structs.AllocQuotaResources(a, nil).GPUCompute
}

// chargeQueue moves the GPUs an allocation holds in its queue from old
// (nil: a new allocation) to cur, both versions of one allocation, in the
// transaction's deltas (written once by flushQueues). Both versions are
// taken as they are, so an in-place update that moved the allocation to a
// job version in another queue moves its GPUs too.
func (tx *Txn) chargeQueue(old, cur *structs.Allocation) {
	add := func(a *structs.Allocation, sign int64) {
		if !countsForUsage(a) {
			return
		}
		if c := allocGPUCompute(a); c != 0 {
			if tx.queueGPUs == nil {
				tx.queueGPUs = map[string]int64{}
			}
			tx.queueGPUs[allocQueue(a)] += sign * c
		}
	}
	add(old, -1)
	add(cur, 1)
}

// flushQueues adds the transaction's GPU deltas to the queues' rows, each
// row written once however many allocations changed it.
func (tx *Txn) flushQueues() error {
	for queue, delta := range tx.queueGPUs {
		if delta == 0 {
			continue
		}
		if err := updateQueueRow(tx.txn, queue, func(r *queueRow) { r.GPUCompute += delta }); err != nil {
			return err
		}
	}
	clear(tx.queueGPUs)
	return nil
}

// queueJobChanged follows a job write from old (nil: a new job) to cur
// (nil: the job was deleted): the queues' job counts, and the waiting
// record of a job with blocked evaluations, which moves with the job's
// queue, appears with the job and goes with it.
func queueJobChanged(txn *memdb.Txn, old, cur *structs.Job) error {
	var oldQ, curQ string
	if old != nil {
		oldQ = structs.QueueName(old.Queue)
	}
	if cur != nil {
		curQ = structs.QueueName(cur.Queue)
	}
	if oldQ == curQ {
		return nil
	}
	if oldQ != "" {
		if err := updateQueueRow(txn, oldQ, func(r *queueRow) { r.Jobs-- }); err != nil {
			return err
		}
	}
	if curQ != "" {
		if err := updateQueueRow(txn, curQ, func(r *queueRow) { r.Jobs++ }); err != nil {
			return err
		}
	}
	job := cur
	if job == nil {
		job = old
	}
	return moveWaitingJob(txn, job, oldQ, curQ)
}

// moveWaitingJob moves the job's waiting record from queue from to queue
// to ("" for none: a new or deleted job).
func moveWaitingJob(txn *memdb.Txn, job *structs.Job, from, to string) error {
	ns := namespaceOf(job.Namespace)
	w, err := first[*waitingJob](nil, txn, TableQueueWaiting, indexID, ns, job.ID)
	if err != nil {
		return err
	}
	if from == "" {
		// A new job: its blocked evaluations, if any, start to count.
		blocked, err := blockedEvalsOf(txn, ns, job.ID)
		if err != nil || blocked == 0 {
			return err
		}
		w = &waitingJob{Namespace: ns, JobID: job.ID, Blocked: blocked}
	}
	if w == nil {
		return nil
	}
	if from != "" {
		if err := updateQueueRow(txn, from, func(r *queueRow) { r.Waiting-- }); err != nil {
			return err
		}
	}
	if to == "" {
		if err := txn.Delete(TableQueueWaiting, w); err != nil {
			return fmt.Errorf("forget waiting job %q: %w", job.ID, err)
		}
		return nil
	}
	moved := *w
	moved.Queue = to
	if err := txn.Insert(TableQueueWaiting, &moved); err != nil {
		return fmt.Errorf("record waiting job %q: %w", job.ID, err)
	}
	return updateQueueRow(txn, to, func(r *queueRow) { r.Waiting++ })
}

// blockedEvalsOf counts the job's blocked evaluations.
func blockedEvalsOf(txn *memdb.Txn, namespace, jobID string) (int, error) {
	iter, err := txn.Get(TableEvals, indexJob, namespace, jobID)
	if err != nil {
		return 0, fmt.Errorf("evals of job %q: %w", jobID, err)
	}
	n := 0
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if raw.(*structs.Evaluation).Status == structs.EvalStatusBlocked {
			n++
		}
	}
	return n, nil
}

// queueEvalChanged follows an evaluation write from old (nil: a new
// evaluation) to cur: an evaluation that becomes blocked makes its job
// wait in its queue, and the job stops waiting when its last blocked
// evaluation is no longer blocked.
func queueEvalChanged(txn *memdb.Txn, old, cur *structs.Evaluation) error {
	was := old != nil && old.Status == structs.EvalStatusBlocked
	is := cur.Status == structs.EvalStatusBlocked
	if was == is {
		return nil
	}
	ns := namespaceOf(cur.Namespace)
	job, err := first[*structs.Job](nil, txn, TableJobs, indexID, ns, cur.JobID)
	if err != nil || job == nil {
		return err
	}
	w, err := first[*waitingJob](nil, txn, TableQueueWaiting, indexID, ns, cur.JobID)
	if err != nil {
		return err
	}
	next := &waitingJob{Namespace: ns, JobID: cur.JobID, Queue: structs.QueueName(job.Queue)}
	if w != nil {
		c := *w
		next = &c
	}
	if is {
		next.Blocked++
	} else {
		next.Blocked--
	}
	switch {
	case next.Blocked > 0:
		err = txn.Insert(TableQueueWaiting, next)
	case w != nil:
		err = txn.Delete(TableQueueWaiting, w)
	}
	if err != nil {
		return fmt.Errorf("update waiting job %q: %w", cur.JobID, err)
	}
	startsWaiting, stopsWaiting := w == nil && next.Blocked > 0, w != nil && next.Blocked <= 0
	switch {
	case startsWaiting:
		return updateQueueRow(txn, next.Queue, func(r *queueRow) { r.Waiting++ })
	case stopsWaiting:
		return updateQueueRow(txn, w.Queue, func(r *queueRow) { r.Waiting-- })
	}
	return nil
}

// readyGPUs is the healthy GPU instances of node if it is ready and
// eligible, else 0 (also for nil).
func readyGPUs(node *structs.Node) int {
	if node == nil || !node.Ready() || node.NodeResources == nil {
		return 0
	}
	n := 0
	for _, g := range node.NodeResources.Devices {
		if g == nil || g.Type != "gpu" {
			continue
		}
		for _, inst := range g.Instances {
			if inst != nil && inst.Healthy {
				n++
			}
		}
	}
	return n
}

// countClusterGPUs follows a node write from old (nil: a new node) to cur
// (nil: the node was deleted) in the cluster's GPU count.
func countClusterGPUs(txn *memdb.Txn, old, cur *structs.Node) error {
	delta := readyGPUs(cur) - readyGPUs(old)
	if delta == 0 {
		return nil
	}
	n, err := clusterGPUs(nil, txn)
	if err != nil {
		return err
	}
	if err := txn.Insert(TableClusterGPUs, &clusterGPUsRow{ID: clusterGPUsRowID, GPUs: n + delta}); err != nil {
		return fmt.Errorf("update cluster GPUs: %w", err)
	}
	return nil
}

// rebuildQueueUsage recomputes every derived queue row from the jobs,
// evaluations, allocations and nodes in txn (after a restore).
func rebuildQueueUsage(txn *memdb.Txn) error {
	for _, table := range []string{TableQueueUsage, TableQueueWaiting, TableClusterGPUs} {
		if _, err := txn.DeleteAll(table, indexID); err != nil {
			return fmt.Errorf("clear %s: %w", table, err)
		}
	}
	rows := map[string]*queueRow{}
	row := func(q string) *queueRow {
		if rows[q] == nil {
			rows[q] = &queueRow{Queue: q}
		}
		return rows[q]
	}
	waiting, err := rebuildQueueJobs(txn, row)
	if err != nil {
		return err
	}
	for _, w := range waiting {
		if err := txn.Insert(TableQueueWaiting, w); err != nil {
			return fmt.Errorf("rebuild waiting job %q: %w", w.JobID, err)
		}
		row(w.Queue).Waiting++
	}
	allocs, err := txn.Get(TableAllocs, indexID)
	if err != nil {
		return fmt.Errorf("rebuild queue usage: %w", err)
	}
	for raw := allocs.Next(); raw != nil; raw = allocs.Next() {
		if a := raw.(*structs.Allocation); countsForUsage(a) {
			row(allocQueue(a)).GPUCompute += allocGPUCompute(a)
		}
	}
	for _, r := range rows {
		if r.empty() {
			continue
		}
		if err := txn.Insert(TableQueueUsage, r); err != nil {
			return fmt.Errorf("rebuild usage of queue %q: %w", r.Queue, err)
		}
	}
	return rebuildClusterGPUs(txn)
}

// rebuildQueueJobs counts the jobs of each queue and returns the waiting
// records of the jobs with blocked evaluations.
func rebuildQueueJobs(txn *memdb.Txn, row func(string) *queueRow) (map[jobKey]*waitingJob, error) {
	jobs, err := txn.Get(TableJobs, indexID)
	if err != nil {
		return nil, fmt.Errorf("rebuild queue jobs: %w", err)
	}
	queueOf := map[jobKey]string{}
	for raw := jobs.Next(); raw != nil; raw = jobs.Next() {
		j := raw.(*structs.Job)
		q := structs.QueueName(j.Queue)
		queueOf[jobKey{namespaceOf(j.Namespace), j.ID}] = q
		row(q).Jobs++
	}
	evals, err := txn.Get(TableEvals, indexID)
	if err != nil {
		return nil, fmt.Errorf("rebuild waiting jobs: %w", err)
	}
	waiting := map[jobKey]*waitingJob{}
	for raw := evals.Next(); raw != nil; raw = evals.Next() {
		e := raw.(*structs.Evaluation)
		k := jobKey{namespaceOf(e.Namespace), e.JobID}
		q, ok := queueOf[k]
		if e.Status != structs.EvalStatusBlocked || !ok {
			continue
		}
		if waiting[k] == nil {
			waiting[k] = &waitingJob{Namespace: k.namespace, JobID: k.id, Queue: q}
		}
		waiting[k].Blocked++
	}
	return waiting, nil
}

func rebuildClusterGPUs(txn *memdb.Txn) error {
	nodes, err := txn.Get(TableNodes, indexID)
	if err != nil {
		return fmt.Errorf("rebuild cluster GPUs: %w", err)
	}
	total := 0
	for raw := nodes.Next(); raw != nil; raw = nodes.Next() {
		total += readyGPUs(raw.(*structs.Node))
	}
	if err := txn.Insert(TableClusterGPUs, &clusterGPUsRow{ID: clusterGPUsRowID, GPUs: total}); err != nil {
		return fmt.Errorf("rebuild cluster GPUs: %w", err)
	}
	return nil
}
