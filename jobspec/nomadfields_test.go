package jobspec

import (
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

var _ = structs.Job{}
