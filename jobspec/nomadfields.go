package jobspec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/droverhq/drover/structs"
)

// JobRegisterBody is the body of PUT /v1/jobs and /v1/job/<id> (Nomad's
// JobRegisterRequest; its other fields are in nomadOnlyFields).
type JobRegisterBody struct {
	Job            *structs.Job
	EnforceIndex   bool
	JobModifyIndex uint64
}

// JobPlanBody is the body of PUT /v1/job/<id>/plan (Nomad's
// JobPlanRequest).
type JobPlanBody struct {
	Job  *structs.Job
	Diff bool
}

// nomadField is a field of Nomad's API that Drover's structs lack.
// A request may carry it empty (null, false, 0, "", [], {}), or equal to
// the default Nomad's client fills in (def, JSON), which changes nothing;
// any other value is refused as not supported by Drover.
type nomadField struct {
	name string
	def  string
}

// nomadOnlyFields lists, per Drover struct (by type name), the fields of
// the matching Nomad API struct that Drover does not implement yet.
// Implementing one means adding the field to the struct in structs and
// deleting its line here (TestNomadFieldsTableComplete says which).
//
// def "*" marks what a server writes and a client may send back (the
// output of `nomad job inspect`): ignored whatever it holds. def
// sameAsGroup marks a task field that Nomad's client copies from the
// task's group (Task.Canonicalize): accepted when it equals the group's.
var nomadOnlyFields = map[string][]nomadField{
	"JobRegisterBody": {
		{"Submission", "*"}, // the source of the job file; Drover keeps none
		{"EvalPriority", ""}, {"PolicyOverride", ""}, {"PreserveCounts", ""}, {"PreserveResources", ""},
		{"Region", "*"}, {"Namespace", "*"}, {"SecretID", "*"}, {"IdempotencyToken", "*"},
	},
	"JobPlanBody": {
		{"PolicyOverride", ""},
		{"Region", "*"}, {"Namespace", "*"}, {"SecretID", "*"}, {"IdempotencyToken", "*"},
	},
	"Job": {
		{"ConsulNamespace", ""}, {"VaultNamespace", ""}, {"NodePool", `"default"`},
		{"Multiregion", ""},
		{"DispatchIdempotencyToken", ""}, {"Reschedule", ""},
		{"VersionTag", "*"}, {"NomadTokenID", "*"},
		// Sent by Nomad clients before 1.9, gone from its api since.
		{"ConsulToken", ""}, {"VaultToken", ""},
	},
	"TaskGroup": {
		{"Consul", ""}, {"MaxRunDuration", ""}, {"StopAfterClientDisconnect", ""},
	},
	"Task": {
		{"Actions", ""}, {"CSIPluginConfig", ""}, {"Consul", ""},
		{"Identities", ""}, {"Identity", ""},
		{"RestartPolicy", sameAsGroup}, {"ScalingPolicies", ""}, {"Schedule", ""}, {"Secrets", ""},
		{"Vault", ""},
	},
	"Resources": {
		{"Cores", ""}, {"IOPS", ""}, {"NUMA", ""}, {"SecretsMB", ""},
	},
	"LogConfig":       {{"Enabled", "true"}},
	"NetworkResource": {{"CNI", ""}, {"DNS", ""}, {"Hostname", ""}, {"MBits", ""}},
	"Port":            {{"IgnoreCollision", ""}},
	// Connect, Identity and the tagged addresses are Consul's.
	"Service": {
		{"CanaryMeta", ""}, {"Connect", ""}, {"EnableTagOverride", ""}, {"Identity", ""}, {"Kind", ""},
		{"TaggedAddresses", ""}, {"Weights", ""},
	},
	"ServiceCheck": {
		{"Advertise", ""}, {"Expose", ""}, {"FailuresBeforeWarning", ""}, {"GRPCService", ""}, {"GRPCUseTLS", ""},
		{"InitialStatus", ""}, {"Notes", ""}, {"TLSServerName", ""},
	},
	"TaskArtifact":  {{"Chown", ""}, {"GetterInsecure", ""}},
	"Template":      {{"ChangeScript", ""}, {"Gid", ""}, {"Once", ""}, {"Uid", ""}, {"VaultGrace", ""}, {"Wait", ""}},
	"VolumeRequest": {{"MountOptions", ""}},
}

// sameAsGroup is the def of a task field accepted when it equals its
// group's field of the same name.
const sameAsGroup = "=group"

// verdict is what the checker makes of a member its struct lacks.
type verdict int

const (
	verdictUnknown     verdict = iota // neither Drover's nor Nomad's
	verdictUnsupported                // Nomad's, holding a value Drover cannot honour
	verdictOK                         // Nomad's, empty or at its default
	verdictSameAsGroup                // Nomad's, accepted if it equals the group's
)

// nomadFieldVerdict says what member key, holding v, of t (a Drover
// struct that has no field for it) means.
func nomadFieldVerdict(t reflect.Type, key string, v any) verdict {
	if t == nil || t.Kind() != reflect.Struct {
		return verdictOK
	}
	for _, f := range nomadOnlyFields[t.Name()] {
		switch {
		case !strings.EqualFold(f.name, key):
			continue
		case f.def == "*" || isEmptyJSON(v) || equalsDefault(v, f.def):
			return verdictOK
		case f.def == sameAsGroup:
			return verdictSameAsGroup
		}
		return verdictUnsupported
	}
	return verdictUnknown
}

// groupCopy is a task member to compare with its group's once the job
// is decoded.
type groupCopy struct {
	offset    int
	path, key string
	group     int
	value     any
}

var groupIndex = regexp.MustCompile(`TaskGroups\[(\d+)\]`)

// checkGroupCopies refuses each recorded task member that differs from
// its group's field of the same name (or, for a group without one, the
// default for the job's type).
func (c *jsonChecker) checkGroupCopies(job *structs.Job) error {
	var errs Errors
	for _, gc := range c.groupCopies {
		if job == nil || gc.group < 0 || gc.group >= len(job.TaskGroups) || job.TaskGroups[gc.group] == nil {
			continue
		}
		want := reflect.ValueOf(job.TaskGroups[gc.group]).Elem().FieldByNameFunc(func(n string) bool { return strings.EqualFold(n, gc.key) })
		var def any
		if want.IsValid() && want.Kind() == reflect.Pointer && !want.IsNil() {
			def = want.Interface()
		} else if strings.EqualFold(gc.key, "RestartPolicy") {
			def = structs.DefaultRestartPolicy(job.Type)
		}
		if !sameFields(gc.value, def) {
			errs = append(errs, c.errorAt(gc.offset, "Unsupported field", fmt.Sprintf(
				"%s: Nomad's field %q differs from the group's, and Drover applies the group's only; set it on the group.", gc.path, gc.key)))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// sameFields reports whether every field of want (a Drover struct) has
// the same value in got (decoded JSON), and got's other members are
// empty.
func sameFields(got, want any) bool {
	b, err := json.Marshal(want)
	if err != nil {
		return false
	}
	var w map[string]any
	gotMap, ok := got.(map[string]any)
	if json.Unmarshal(b, &w) != nil || !ok {
		return false
	}
	for k, gv := range gotMap {
		wv, known := w[k]
		if !known {
			if !isEmptyJSON(gv) {
				return false
			}
			continue
		}
		if !equalsDefault(gv, string(mustJSON(wv))) {
			return false
		}
	}
	return true
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// equalsDefault reports whether v (decoded with UseNumber) equals the
// JSON def.
func equalsDefault(v any, def string) bool {
	if def == "" {
		return false
	}
	got, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(def), &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// DecodeJSONBody decodes a request body (a JobRegisterBody, JobPlanBody,
// ...) into out after checking its members the way JSON job files are
// checked: a field that is neither Drover's nor Nomad's, or a Nomad field
// Drover does not implement holding a value, is an error naming it.
func DecodeJSONBody(src []byte, out any) error {
	chk := &jsonChecker{filename: "request body", src: src}
	if err := chk.check(out); err != nil {
		return err
	}
	if err := json.Unmarshal(src, out); err != nil {
		return chk.decodeError(err)
	}
	var job *structs.Job
	switch b := out.(type) {
	case *JobRegisterBody:
		job = b.Job
	case *JobPlanBody:
		job = b.Job
	case *structs.Job:
		job = b
	}
	return chk.checkGroupCopies(job)
}
