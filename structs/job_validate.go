package structs

// RPCJobValidate checks a job as Job.Register would, storing nothing.
const RPCJobValidate = "Job.Validate"

// JobValidateRequest is Nomad's: the job to check.
type JobValidateRequest struct {
	Job *Job
	WriteRequest
}

// JobValidateResponse is Nomad's: a job that does not validate is an
// answer (Error, and ValidationErrors one line each), not a failed call.
// DriverConfigValidated is false: the servers do not check task configs
// against the drivers (the client does when it starts the task).
type JobValidateResponse struct {
	DriverConfigValidated bool
	ValidationErrors      []string
	Error                 string
	Warnings              string
}
