package structs

import "testing"

// TestWorkloadJobID: a child reads under its root parent; an ID with '/'
// that is not a child's reads nothing (its paths are another job's
// group's).
func TestWorkloadJobID(t *testing.T) {
	tests := []struct {
		id, want string
		ok       bool
	}{
		{"web", "web", true},
		{"render/dispatch-1790000000-ab12cd34", "render", true},
		{"nightly/periodic-1790000000", "nightly", true},
		{"render/dispatch-x-1790000000-ab12cd34/periodic-1790000100", "render", true},
		{"web/train", "", false},
		{"web/train/periodic-1", "", false},
	}
	for _, tt := range tests {
		got, ok := WorkloadJobID(tt.id)
		if got != tt.want || ok != tt.ok {
			t.Errorf("WorkloadJobID(%q) = %q, %v; want %q, %v", tt.id, got, ok, tt.want, tt.ok)
		}
	}
}
