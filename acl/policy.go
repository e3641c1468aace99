package acl

import "slices"

// Policy values: the coarse grants a rule's policy attribute names.
// Namespaces take deny, read, write and scale; node, agent, operator,
// quota and queue take deny, read and write; plugin takes deny, read and
// list.
const (
	PolicyDeny  = "deny"
	PolicyRead  = "read"
	PolicyWrite = "write"
	PolicyScale = "scale"
	PolicyList  = "list"
)

// Namespace capabilities, with Nomad's names.
const (
	CapDeny                 = "deny"
	CapListJobs             = "list-jobs"
	CapParseJob             = "parse-job"
	CapReadJob              = "read-job"
	CapSubmitJob            = "submit-job"
	CapDispatchJob          = "dispatch-job"
	CapReadLogs             = "read-logs"
	CapReadFS               = "read-fs"
	CapAllocExec            = "alloc-exec"
	CapAllocNodeExec        = "alloc-node-exec"
	CapAllocLifecycle       = "alloc-lifecycle"
	CapReadJobScaling       = "read-job-scaling"
	CapScaleJob             = "scale-job"
	CapListScalingPolicies  = "list-scaling-policies"
	CapReadScalingPolicy    = "read-scaling-policy"
	CapSubmitRecommendation = "submit-recommendation"
	CapSentinelOverride     = "sentinel-override"
	CapCSIRegisterPlugin    = "csi-register-plugin"
	CapCSIWriteVolume       = "csi-write-volume"
	CapCSIReadVolume        = "csi-read-volume"
	CapCSIListVolume        = "csi-list-volume"
	CapCSIMountVolume       = "csi-mount-volume"
	CapHostVolumeCreate     = "host-volume-create"
	CapHostVolumeRegister   = "host-volume-register"
	CapHostVolumeRead       = "host-volume-read"
	CapHostVolumeWrite      = "host-volume-write"
	CapHostVolumeDelete     = "host-volume-delete"

	// CapSubmitSharedGPU is Drover's: submit a job that asks for a
	// fractional or shared GPU. Policy "write" grants it.
	CapSubmitSharedGPU = "submit-shared-gpu"
)

// namespaceCapabilities is every capability a namespace rule may list.
var namespaceCapabilities = []string{
	CapDeny, CapListJobs, CapParseJob, CapReadJob, CapSubmitJob, CapDispatchJob,
	CapReadLogs, CapReadFS, CapAllocExec, CapAllocNodeExec, CapAllocLifecycle,
	CapReadJobScaling, CapScaleJob, CapListScalingPolicies, CapReadScalingPolicy,
	CapSubmitRecommendation, CapSentinelOverride,
	CapCSIRegisterPlugin, CapCSIWriteVolume, CapCSIReadVolume, CapCSIListVolume, CapCSIMountVolume,
	CapHostVolumeCreate, CapHostVolumeRegister, CapHostVolumeRead, CapHostVolumeWrite, CapHostVolumeDelete,
	CapSubmitSharedGPU,
}

// Shorthand expansions of a namespace rule's policy, as in Nomad (plus
// Drover's submit-shared-gpu in write).
var (
	readCapabilities = []string{
		CapListJobs, CapParseJob, CapReadJob, CapCSIListVolume, CapCSIReadVolume,
		CapReadJobScaling, CapListScalingPolicies, CapReadScalingPolicy,
	}
	writeCapabilities = append(slices.Clip(readCapabilities),
		CapSubmitJob, CapDispatchJob, CapReadLogs, CapReadFS, CapAllocExec, CapAllocLifecycle,
		CapCSIWriteVolume, CapCSIMountVolume, CapScaleJob, CapSubmitRecommendation, CapSubmitSharedGPU,
	)
	scaleCapabilities = []string{
		CapListScalingPolicies, CapReadScalingPolicy, CapReadJobScaling, CapScaleJob,
	}
)

// ExpandNamespacePolicy returns the capabilities a namespace rule's
// policy grants: a new slice, empty for "" and nil for an unknown policy.
func ExpandNamespacePolicy(policy string) []string {
	switch policy {
	case PolicyDeny:
		return []string{CapDeny}
	case PolicyRead:
		return slices.Clone(readCapabilities)
	case PolicyWrite:
		return slices.Clone(writeCapabilities)
	case PolicyScale:
		return slices.Clone(scaleCapabilities)
	case "":
		return []string{}
	}
	return nil
}

// Policy is parsed policy rules. Node, Agent, Operator and Quota are ""
// when the rules have no such block.
type Policy struct {
	Namespaces []*NamespaceRule
	Node       string
	Agent      string
	Operator   string
	Quota      string
	// Queues are Drover's: who may submit into (write) or view (read) a
	// fair-share queue.
	Queues []*QueueRule
	// Raw is the rules as given to Parse.
	Raw string
}

// NamespaceRule grants capabilities in the namespaces Name matches (a
// name, or a glob with * wildcards): those Policy expands to plus
// Capabilities, as written.
type NamespaceRule struct {
	Name         string
	Policy       string
	Capabilities []string
	// Variables are the rule's variables path rules (acl/variables.go).
	Variables []*VariablesPathRule
}

// QueueRule grants read or write on the queues Name matches (a name, or a
// glob with * wildcards), or denies them.
type QueueRule struct {
	Name   string
	Policy string
}
