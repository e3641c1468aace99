package api

import "reflect"

// dropNulls cleans a decoded answer so that callers can range over it
// without nil checks on every element: null elements of lists are
// removed, and null values in maps of pointers become empty objects (the
// key may carry meaning, such as a task group that failed to place).
// Pointer fields that are null stay nil: "absent" is part of the API.
//
// Agents never send such nulls on purpose, but a buggy or foreign server
// could, and the helpers of package structs (DeviceIDs, GPUCount, ...)
// would panic on them.
func dropNulls(v any) {
	cleanValue(reflect.ValueOf(v), 0)
}

// maxCleanDepth bounds the walk; decoded JSON has no cycles, but a
// caller's value might.
const maxCleanDepth = 64

func cleanValue(v reflect.Value, depth int) {
	if depth > maxCleanDepth || !v.IsValid() {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			cleanValue(v.Elem(), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				cleanValue(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		cleanSlice(v, depth)
	case reflect.Map:
		cleanMap(v, depth)
	}
}

func cleanSlice(v reflect.Value, depth int) {
	if v.IsNil() {
		return
	}
	elem := v.Type().Elem().Kind()
	if (elem == reflect.Pointer || elem == reflect.Map || elem == reflect.Slice) && v.CanSet() {
		kept := 0
		for i := range v.Len() {
			if e := v.Index(i); !e.IsNil() {
				v.Index(kept).Set(e)
				kept++
			}
		}
		v.SetLen(kept)
	}
	for i := range v.Len() {
		cleanValue(v.Index(i), depth+1)
	}
}

func cleanMap(v reflect.Value, depth int) {
	if v.IsNil() {
		return
	}
	elemType := v.Type().Elem()
	for _, k := range v.MapKeys() {
		e := v.MapIndex(k)
		if elemType.Kind() == reflect.Pointer {
			if e.IsNil() {
				v.SetMapIndex(k, reflect.New(elemType.Elem()))
				continue
			}
			cleanValue(e, depth+1)
			continue
		}
		// Map values are not addressable: clean a copy and store it back.
		if elemType.Kind() == reflect.Struct || elemType.Kind() == reflect.Slice {
			c := reflect.New(elemType).Elem()
			c.Set(e)
			cleanValue(c, depth+1)
			v.SetMapIndex(k, c)
		}
	}
}
