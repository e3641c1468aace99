package jobspec

import (
	"encoding/json"
	"reflect"
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
// output of `nomad job inspect`): ignored whatever it holds.
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
		{"AllAtOnce", ""}, {"ConsulNamespace", ""}, {"VaultNamespace", ""}, {"NodePool", `"default"`},
		{"Multiregion", ""}, {"Periodic", ""}, {"ParameterizedJob", ""}, {"Payload", ""},
		{"DispatchIdempotencyToken", ""}, {"Reschedule", ""}, {"Migrate", ""}, {"UI", ""},
		{"ParentID", ""}, {"Dispatched", ""},
		{"Stable", "*"}, {"VersionTag", "*"}, {"NomadTokenID", "*"},
	},
	"TaskGroup": {
		{"Consul", ""}, {"Disconnect", ""}, {"MaxClientDisconnect", ""}, {"MaxRunDuration", ""},
		{"PreventRescheduleOnLost", ""}, {"Scaling", ""}, {"Services", ""}, {"ShutdownDelay", ""},
		{"StopAfterClientDisconnect", ""}, {"Volumes", ""},
		{"EphemeralDisk", `{"Sticky":false,"Migrate":false,"SizeMB":300}`},
		{"Migrate", `{"MaxParallel":1,"HealthCheck":"checks","MinHealthyTime":10000000000,"HealthyDeadline":300000000000}`},
	},
	"Task": {
		{"Actions", ""}, {"Artifacts", ""}, {"CSIPluginConfig", ""}, {"Consul", ""}, {"DispatchPayload", ""},
		{"Identities", ""}, {"Identity", ""}, {"Kind", ""}, {"Leader", ""}, {"Lifecycle", ""},
		{"RestartPolicy", ""}, {"ScalingPolicies", ""}, {"Schedule", ""}, {"Secrets", ""}, {"Services", ""},
		{"ShutdownDelay", ""}, {"Templates", ""}, {"Vault", ""}, {"VolumeMounts", ""},
	},
	"Resources": {
		{"Cores", ""}, {"DiskMB", ""}, {"IOPS", ""}, {"MemoryMaxMB", ""}, {"NUMA", ""}, {"SecretsMB", ""},
	},
	"RestartPolicy":   {{"RenderTemplates", ""}},
	"LogConfig":       {{"Disabled", ""}, {"Enabled", "true"}},
	"UpdateStrategy":  {{"AutoPromote", ""}, {"Canary", ""}},
	"NetworkResource": {{"CIDR", ""}, {"CNI", ""}, {"DNS", ""}, {"Device", ""}, {"Hostname", ""}, {"IP", ""}, {"MBits", ""}},
	"Port":            {{"IgnoreCollision", ""}},
}

// nomadFieldVerdict says what a member that t (a Drover struct) has no
// field for means: nomad reports a Nomad field, ok whether its value v
// changes nothing.
func nomadFieldVerdict(t reflect.Type, key string, v any) (nomad, ok bool) {
	if t == nil || t.Kind() != reflect.Struct {
		return false, isEmptyJSON(v)
	}
	for _, f := range nomadOnlyFields[t.Name()] {
		if !strings.EqualFold(f.name, key) {
			continue
		}
		return true, f.def == "*" || isEmptyJSON(v) || equalsDefault(v, f.def)
	}
	return false, false
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
	return nil
}
