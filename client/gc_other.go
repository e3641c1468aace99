//go:build !linux && !darwin

package client

// diskUsedPercent is not measured on this platform: disk use never
// triggers a collection.
func diskUsedPercent(string) (float64, bool) { return 0, false }

// diskFreeMB is not measured on this platform: the node reports no disk
// and ephemeral disk sizes are not counted against it.
func diskFreeMB(string) (int64, bool) { return 0, false }
