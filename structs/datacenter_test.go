package structs

import "testing"

func TestMatchDatacenter(t *testing.T) {
	tests := []struct {
		pattern, dc string
		want        bool
	}{
		{"dc1", "dc1", true},
		{"dc1", "dc10", false},
		{"*", "anything", true},
		{"*", "", true},
		{"dc*", "dc1", true},
		{"dc*", "dc", true},
		{"dc*", "east-dc1", false},
		{"*-west", "us-west", true},
		{"*-west", "us-west-2", false},
		{"us-*-1", "us-west-1", true},
		{"us-*-1", "us-1", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "acb", false},
		{"ab*ba", "aba", false},
	}
	for _, tt := range tests {
		if got := MatchDatacenter(tt.pattern, tt.dc); got != tt.want {
			t.Errorf("MatchDatacenter(%q, %q) = %v, want %v", tt.pattern, tt.dc, got, tt.want)
		}
	}
}
