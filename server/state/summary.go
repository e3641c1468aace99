package state

import (
	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// JobSummary counts the job's allocations per task group by client status,
// with the allocations still queued according to its latest evaluation.
// It returns nil for an unknown job.
func (s *StateStore) JobSummary(ws memdb.WatchSet, namespace, jobID string) (*structs.JobSummary, error) {
	// Read job, allocs and evals from one point in time. A snapshot shares
	// the store's trees, so watches on it fire on the store's changes.
	s = &StateStore{db: s.db.Snapshot()}
	job, err := s.JobByID(ws, namespace, jobID)
	if err != nil || job == nil {
		return nil, err
	}
	allocs, err := s.AllocsByJob(ws, namespace, jobID)
	if err != nil {
		return nil, err
	}
	evals, err := s.EvalsByJob(ws, namespace, jobID)
	if err != nil {
		return nil, err
	}
	sum := &structs.JobSummary{
		JobID:       job.ID,
		Namespace:   job.Namespace,
		Summary:     make(map[string]structs.TaskGroupSummary, len(job.TaskGroups)),
		CreateIndex: job.CreateIndex,
		ModifyIndex: job.ModifyIndex,
	}
	for _, tg := range job.TaskGroups {
		sum.Summary[tg.Name] = structs.TaskGroupSummary{}
	}
	for _, a := range allocs {
		tg := sum.Summary[a.TaskGroup]
		countAlloc(&tg, a.ClientStatus)
		sum.Summary[a.TaskGroup] = tg
		sum.ModifyIndex = maxIndex(sum.ModifyIndex, a.ModifyIndex)
	}
	if latest := latestEval(evals); latest != nil {
		for name, n := range latest.QueuedAllocations {
			tg := sum.Summary[name]
			tg.Queued = n
			sum.Summary[name] = tg
		}
		sum.ModifyIndex = maxIndex(sum.ModifyIndex, latest.ModifyIndex)
	}
	return sum, nil
}

func countAlloc(tg *structs.TaskGroupSummary, clientStatus string) {
	switch clientStatus {
	case structs.AllocClientStatusPending:
		tg.Starting++
	case structs.AllocClientStatusRunning:
		tg.Running++
	case structs.AllocClientStatusComplete:
		tg.Complete++
	case structs.AllocClientStatusFailed:
		tg.Failed++
	case structs.AllocClientStatusLost:
		tg.Lost++
	case structs.AllocClientStatusUnknown:
		tg.Unknown++
	}
}

// latestEval returns the most recently created evaluation, or nil.
func latestEval(evals []*structs.Evaluation) *structs.Evaluation {
	var latest *structs.Evaluation
	for _, e := range evals {
		if latest == nil || e.CreateIndex > latest.CreateIndex ||
			(e.CreateIndex == latest.CreateIndex && e.CreateTime > latest.CreateTime) {
			latest = e
		}
	}
	return latest
}
