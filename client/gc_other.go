//go:build !linux && !darwin

package client

// diskUsedPercent is not measured on this platform: disk use never
// triggers a collection.
func diskUsedPercent(string) (float64, bool) { return 0, false }
