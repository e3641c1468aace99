package structs

// Job versions: every registration that changes a job's spec stores the
// new spec as a version (server/state/job_versions.go); the last
// JobTrackedVersions are kept, for `job history`, `job revert` and the
// deployment watcher's auto-revert to the latest stable version.

// JobTrackedVersions is how many versions of a job the servers keep
// (Nomad's JobTrackedVersions). It is a constant, not a limit in the
// agent config: every server must prune the same versions when it
// applies the same entry.
const JobTrackedVersions = 6

// JobStabilityRequestType marks one job version stable or not.
const JobStabilityRequestType MessageType = 70

// RPC methods of job versions.
const (
	RPCJobVersions = "Job.GetJobVersions"
	RPCJobRevert   = "Job.Revert"
	RPCJobStable   = "Job.Stable"
)

// JobVersionsRequest asks for a job's stored versions, newest first.
type JobVersionsRequest struct {
	JobID string
	// Diffs asks for the diff of each version against the one before it.
	Diffs bool
	QueryOptions
}

// JobVersionsResponse is Nomad's: Diffs[i] is Versions[i] against
// Versions[i+1].
type JobVersionsResponse struct {
	Versions []*Job
	Diffs    []*JobDiff
	QueryMeta
}

// JobVersionRequest asks for one stored version of a job.
type JobVersionRequest struct {
	JobID   string
	Version uint64
	QueryOptions
}

// JobRevertRequest registers a stored version of a job again, as a new
// version. With EnforcePriorVersion it applies only while the job is at
// that version.
type JobRevertRequest struct {
	JobID               string
	JobVersion          uint64
	EnforcePriorVersion *uint64
	WriteRequest
}

// JobStabilityRequest sets the Stable flag of one job version (also the
// Raft entry of JobStabilityRequestType).
type JobStabilityRequest struct {
	JobID      string
	JobVersion uint64
	Stable     bool
	WriteRequest
}

// JobStabilityResponse is Nomad's.
type JobStabilityResponse struct {
	JobModifyIndex uint64
	Index          uint64
}
