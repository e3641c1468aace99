package server

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
)

// periodicEndpoint serves the "Periodic" RPC methods.
type periodicEndpoint struct{ srv *Server }

// Force launches a periodic job's child now, whatever its schedule and
// prohibit_overlap (Nomad's). It needs submit-job.
func (e *periodicEndpoint) Force(args *structs.PeriodicForceRequest, reply *structs.PeriodicForceResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCPeriodicForce, &err)
	if done, err := s.forward(structs.RPCPeriodicForce, args, reply); done {
		return err
	}
	if err := s.allowNS(args.AuthToken, writeNamespace(args.WriteRequest), acl.CapSubmitJob); err != nil {
		return err
	}
	parent, err := s.parentJob(structs.RPCPeriodicForce, args.JobID, writeNamespace(args.WriteRequest))
	if err != nil {
		return err
	}
	// The child is new work in the parent's queue: what a submit of the
	// same spec needs (queue write, submit-shared-gpu) is needed here too.
	if err := s.authorizeSubmit(args.AuthToken, parent); err != nil {
		return err
	}
	if !parent.IsPeriodic() || parent.IsParameterized() {
		return structs.KindErrorf(structs.ErrInvalid, "job %q is not a periodic job", parent.ID)
	}
	if parent.Stop {
		return structs.KindErrorf(structs.ErrInvalid, "job %q is stopped", parent.ID)
	}
	launch, err := s.launchPeriodic(parent, s.periodicClock().Now())
	if err != nil {
		return err // a second force in the same second conflicts: Nomad's IDs are per second
	}
	reply.EvalID = launch.EvalID
	reply.EvalCreateIndex = launch.EvalCreateIndex
	reply.Index = launch.Index
	return nil
}

// parentJob reads the job a Force or Dispatch names.
func (s *Server) parentJob(method, id, ns string) (*structs.Job, error) {
	if id == "" {
		return nil, errMissing(method, "job ID")
	}
	job, err := s.State().JobByID(nil, ns, id)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", method, id, err)
	}
	if job == nil {
		return nil, structs.KindErrorf(structs.ErrNotFound, "job %q not found", id)
	}
	return job, nil
}

// Dispatch registers a child of a parameterized job with the request's
// payload and meta, and its evaluation. It needs dispatch-job (Nomad's).
func (e *jobEndpoint) Dispatch(args *structs.JobDispatchRequest, reply *structs.JobDispatchResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobDispatch, &err)
	if done, err := s.forward(structs.RPCJobDispatch, args, reply); done {
		return err
	}
	if err := s.allowNS(args.AuthToken, writeNamespace(args.WriteRequest), acl.CapDispatchJob); err != nil {
		return err
	}
	parent, err := s.parentJob(structs.RPCJobDispatch, args.JobID, writeNamespace(args.WriteRequest))
	if err != nil {
		return err
	}
	if err := s.authorizeDispatch(args.AuthToken, parent); err != nil {
		return err
	}
	if err := checkDispatch(parent, args); err != nil {
		return structs.KindErrorf(structs.ErrInvalid, "dispatch job %q: %v", parent.ID, err)
	}
	id, err := dispatchedID(parent.ID, args.IdPrefixTemplate, s.periodicClock().Now().Unix())
	if err != nil {
		return err
	}
	child := parent.DeriveChild(id)
	if parent.Periodic != nil { // Nomad's: a periodic parameterized job's children are periodic
		p := *parent.Periodic
		child.Periodic = &p
	}
	child.Dispatched = true
	child.Payload = slices.Clone(args.Payload)
	child.MergeMeta(args.Meta)
	if args.Priority != 0 {
		child.Priority = args.Priority
	}
	child.SubmitTime = 0
	reg := &structs.JobRegisterRequest{Job: child, EnforceIndex: true, WriteRequest: args.WriteRequest}
	var out structs.JobRegisterResponse
	if err := s.registerJob(reg, &out); err != nil {
		return fmt.Errorf("dispatch job %q: %w", parent.ID, err)
	}
	reply.DispatchedJobID = id
	reply.EvalID = out.EvalID
	reply.EvalCreateIndex = out.EvalCreateIndex
	reply.JobCreateIndex = out.JobModifyIndex
	reply.Index = out.Index
	return nil
}

// authorizeDispatch checks what a dispatch needs beyond dispatch-job: a
// child is new work in the parent's queue, so the token must be allowed
// to submit into that queue and, when the parent shares a GPU, hold
// submit-shared-gpu, as a submit of the same spec would (acl.go).
func (s *Server) authorizeDispatch(token string, parent *structs.Job) error {
	ns := parent.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	_, err := s.authorize(token, func(a *acl.ACL) bool {
		return a.AllowQueue(structs.QueueName(parent.Queue), true) &&
			(!jobSharesGPU(parent) || a.AllowNamespaceOperation(ns, acl.CapSubmitSharedGPU))
	})
	return err
}

// checkDispatch checks a dispatch request against its parent's
// parameterized block.
func checkDispatch(parent *structs.Job, args *structs.JobDispatchRequest) error {
	p := parent.ParameterizedJob
	switch {
	case !parent.IsParameterized():
		return fmt.Errorf("job is not a parameterized job")
	case parent.Stop:
		return fmt.Errorf("job is stopped")
	case len(args.Payload) > structs.DispatchPayloadSizeLimit:
		return fmt.Errorf("payload of %d bytes exceeds the limit of %d", len(args.Payload), structs.DispatchPayloadSizeLimit)
	case p.Payload == structs.DispatchPayloadRequired && len(args.Payload) == 0:
		return fmt.Errorf("payload is required")
	case p.Payload == structs.DispatchPayloadForbidden && len(args.Payload) > 0:
		return fmt.Errorf("payload is forbidden")
	case len(args.Meta) > structs.DispatchMaxMeta:
		return fmt.Errorf("%d meta keys, at most %d", len(args.Meta), structs.DispatchMaxMeta)
	case args.Priority != 0 && (args.Priority < structs.JobMinPriority || args.Priority > structs.JobMaxPriority):
		return fmt.Errorf("priority %d must be between %d and %d", args.Priority, structs.JobMinPriority, structs.JobMaxPriority)
	}
	var unknown []string
	for k, v := range args.Meta {
		if !slices.Contains(p.MetaRequired, k) && !slices.Contains(p.MetaOptional, k) {
			unknown = append(unknown, k)
		}
		if len(v) > structs.DispatchMaxMetaValue {
			return fmt.Errorf("meta %q: value of %d bytes over the limit %d", k, len(v), structs.DispatchMaxMetaValue)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("meta keys not allowed by the parameterized block: %s", strings.Join(unknown, ", "))
	}
	var missing []string
	for _, k := range p.MetaRequired {
		if _, ok := args.Meta[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing required meta keys: %s", strings.Join(missing, ", "))
	}
	return nil
}

// idPrefixRe is what an id prefix template may hold.
var idPrefixRe = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,64}$`)

// dispatchedID is Nomad's dispatched child ID:
// `<parent>/dispatch-[<prefix>-]<unix>-<8 hex>`.
func dispatchedID(parent, prefix string, unix int64) (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("dispatch ID: %w", err)
	}
	suffix := fmt.Sprintf("%d-%s", unix, hex.EncodeToString(b[:]))
	if prefix == "" {
		return parent + structs.DispatchLaunchSuffix + suffix, nil
	}
	if !idPrefixRe.MatchString(prefix) {
		return "", structs.KindErrorf(structs.ErrInvalid, "dispatch: id prefix template %q must be 1-64 letters, digits, '_', '-' or '.'", prefix)
	}
	return parent + structs.DispatchLaunchSuffix + prefix + "-" + suffix, nil
}
