package scheduler

import (
	"reflect"

	"github.com/droverhq/drover/structs"
)

// groupSpecEqual reports whether two versions of a task group would run
// the same allocations: everything but Count and the update strategy
// (which says how to change allocations, not what they run) is equal.
// Nil and empty maps and slices are equal, since a round trip through the
// wire codec may turn one into the other.
func groupSpecEqual(old, cur *structs.TaskGroup) bool {
	if old == nil || cur == nil {
		return old == cur
	}
	a, b := old.Copy(), cur.Copy()
	a.Count, b.Count = 0, 0
	a.Update, b.Update = nil, nil
	// Scaling bounds and the migrate strategy change no allocation.
	a.Scaling, b.Scaling, a.Migrate, b.Migrate = nil, nil, nil, nil
	return specEqual(reflect.ValueOf(a), reflect.ValueOf(b))
}

func specEqual(a, b reflect.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return specEqual(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !specEqual(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !specEqual(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() || !specEqual(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	}
	if !a.CanInterface() {
		return false
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}
