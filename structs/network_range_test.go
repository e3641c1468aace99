package structs

import "testing"

// TestDynamicPortRangeBounded: a node (its config or a forged
// registration) reporting a range beyond 65535 gets the default range,
// so the scheduler never hands out a port that cannot exist nor scans a
// range of billions.
func TestDynamicPortRangeBounded(t *testing.T) {
	for _, tt := range []struct {
		min, max, lo, hi int
	}{
		{30000, 30010, 30000, 30010},
		{1, 65535, 1, 65535},
		{20000, 1 << 31, DefaultMinDynamicPort, DefaultMaxDynamicPort},
		{65535, 70000, DefaultMinDynamicPort, DefaultMaxDynamicPort},
		{300, 200, DefaultMinDynamicPort, DefaultMaxDynamicPort},
		{-5, 100, DefaultMinDynamicPort, DefaultMaxDynamicPort},
	} {
		n := &Node{NodeResources: &NodeResources{MinDynamicPort: tt.min, MaxDynamicPort: tt.max}}
		if lo, hi := n.DynamicPortRange(); lo != tt.lo || hi != tt.hi {
			t.Errorf("range %d-%d = %d-%d, want %d-%d", tt.min, tt.max, lo, hi, tt.lo, tt.hi)
		}
	}
}
