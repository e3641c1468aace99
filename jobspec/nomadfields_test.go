package jobspec

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/droverhq/drover/structs"
)

// TestNomadFieldsTableComplete walks Nomad's api.Job beside structs.Job:
// every Nomad field must be a Drover field (supported) or listed in
// nomadOnlyFields (accepted empty, refused set). A field another stream
// adds to structs must leave the table.
func TestNomadFieldsTableComplete(t *testing.T) {
	missing := map[string][]string{}
	stale := map[string][]string{}
	seen := map[[2]reflect.Type]bool{}
	var walk func(n, d reflect.Type)
	walk = func(n, d reflect.Type) {
		n, d = structOf(n), structOf(d)
		if n == nil || d == nil || seen[[2]reflect.Type{n, d}] {
			return
		}
		seen[[2]reflect.Type{n, d}] = true
		for _, f := range flatFields(n) {
			name := jsonName(f)
			if name == "" {
				continue
			}
			dt, ok := memberType(d, name)
			listed := slices.ContainsFunc(nomadOnlyFields[d.Name()], func(e nomadField) bool { return strings.EqualFold(e.name, name) })
			switch {
			case ok && listed:
				stale[d.Name()] = append(stale[d.Name()], name)
			case ok:
				walk(f.Type, dt)
			case !listed:
				missing[d.Name()] = append(missing[d.Name()], name)
			}
		}
	}
	walk(reflect.TypeFor[nomad.JobRegisterRequest](), reflect.TypeFor[JobRegisterBody]())
	walk(reflect.TypeFor[nomad.JobPlanRequest](), reflect.TypeFor[JobPlanBody]())
	for _, m := range []map[string][]string{missing, stale} {
		for k := range m {
			sort.Strings(m[k])
		}
	}
	if len(missing) > 0 {
		t.Errorf("Nomad fields neither in structs nor in nomadOnlyFields: %v", missing)
	}
	if len(stale) > 0 {
		t.Errorf("fields in nomadOnlyFields that structs now has (delete them from the table): %v", stale)
	}
}

// flatFields lists t's fields with embedded structs' fields in their
// place, as encoding/json sees them.
func flatFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && structOf(f.Type) != nil {
			if _, tagged := f.Tag.Lookup("json"); !tagged {
				out = append(out, flatFields(structOf(f.Type))...)
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

func structOf(t reflect.Type) reflect.Type {
	for t != nil {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			return t
		default:
			return nil
		}
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	if tag, ok := f.Tag.Lookup("json"); ok {
		n, _, _ := strings.Cut(tag, ",")
		if n == "-" {
			return ""
		}
		if n != "" {
			return n
		}
	}
	return f.Name
}

// nomadRegisterJSON is what Nomad's client sends to register job:
// Canonicalize fills in Nomad's defaults and nulls for the rest.
func nomadRegisterJSON(t *testing.T, job *nomad.Job, edit func(*nomad.Job)) string {
	t.Helper()
	task := nomad.NewTask("t", "raw_exec").SetConfig("command", "/bin/true")
	job.AddTaskGroup(nomad.NewTaskGroup("g", 1).AddTask(task))
	job.Canonicalize()
	if edit != nil {
		edit(job)
	}
	b, err := json.Marshal(&nomad.JobRegisterRequest{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDecodeJSONBody_NomadClient: the official client's whole register
// payload decodes; a Nomad field Drover lacks, set, and a name that is
// nobody's field are refused naming them.
func TestDecodeJSONBody_NomadClient(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr string
	}{
		{"service job", nomadRegisterJSON(t, nomad.NewServiceJob("svc", "svc", "global", 50), nil), ""},
		{"batch job", nomadRegisterJSON(t, nomad.NewBatchJob("b", "b", "global", 50), nil), ""},
		{"group restart copied into the task", nomadRegisterJSON(t, nomad.NewBatchJob("b", "b", "global", 50), func(j *nomad.Job) {
			j.TaskGroups[0].RestartPolicy.Attempts = ptr(7)
			j.TaskGroups[0].Tasks[0].RestartPolicy.Attempts = ptr(7)
		}), ""},
		{"task restart of its own", nomadRegisterJSON(t, nomad.NewBatchJob("b", "b", "global", 50), func(j *nomad.Job) {
			rp := *j.TaskGroups[0].Tasks[0].RestartPolicy
			rp.Attempts = ptr(9)
			j.TaskGroups[0].Tasks[0].RestartPolicy = &rp
		}), `Nomad's field "RestartPolicy" differs from the group's`},
		{"periodic", nomadRegisterJSON(t, nomad.NewBatchJob("p", "p", "global", 50), func(j *nomad.Job) {
			j.Periodic = &nomad.PeriodicConfig{Spec: ptr("*/5 * * * *")}
		}), ""},
		{"multiregion", nomadRegisterJSON(t, nomad.NewServiceJob("s", "s", "global", 50), func(j *nomad.Job) {
			j.Multiregion = &nomad.Multiregion{Regions: []*nomad.MultiregionRegion{{Name: "west"}}}
		}), `Job: Nomad's field "Multiregion" is not supported by Drover yet`},
		{"consul connect", nomadRegisterJSON(t, nomad.NewServiceJob("s", "s", "global", 50), func(j *nomad.Job) {
			j.TaskGroups[0].Services = []*nomad.Service{{Name: "api", PortLabel: "8080", Provider: "nomad", Connect: &nomad.ConsulConnect{Native: true}}}
		}), `Nomad's field "Connect" is not supported`},
		{"typo", strings.Replace(nomadRegisterJSON(t, nomad.NewServiceJob("s", "s", "global", 50), nil), `"Priority":`, `"Priorty":0,"Priority":`, 1),
			`Job has no field "Priorty" (neither Drover's nor Nomad's)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body JobRegisterBody
			err := DecodeJSONBody([]byte(tt.body), &body)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("got %v, want it accepted", err)
			case tt.wantErr == "" && (body.Job == nil || len(body.Job.TaskGroups) != 1):
				t.Fatalf("got %+v, want the job", body.Job)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got %v, want an error with %q", err, tt.wantErr)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

var _ = structs.Job{}
