package structs

import (
	"errors"
	"testing"
)

// TestScalingPolicyID: the ID is stable for a namespace, job and group
// and differs when any of them does (no ambiguity from joining them).
func TestScalingPolicyID(t *testing.T) {
	id := ScalingPolicyID("default", "web", "g")
	if id != ScalingPolicyID("default", "web", "g") {
		t.Fatal("ID not stable")
	}
	for _, other := range [][3]string{{"other", "web", "g"}, {"default", "web2", "g"}, {"default", "web", "h"}, {"default", "we", "bg"}} {
		if ScalingPolicyID(other[0], other[1], other[2]) == id {
			t.Errorf("%v has the same ID as default/web/g", other)
		}
	}
}

// TestScalingPolicyCopyIsDeep: a copy shares no pointers or nested maps.
func TestScalingPolicyCopyIsDeep(t *testing.T) {
	p := &ScalingPolicy{Min: new(int64(1)), Max: new(int64(2)), Enabled: new(true),
		Target: map[string]string{"Job": "x"},
		Policy: map[string]any{"check": []any{map[string]any{"q": "a"}}}}
	c := p.Copy()
	*c.Min, *c.Max, *c.Enabled, c.Target["Job"] = 5, 6, false, "y"
	c.Policy["check"].([]any)[0].(map[string]any)["q"] = "b"
	if *p.Min != 1 || *p.Max != 2 || !*p.Enabled || p.Target["Job"] != "x" || p.Policy["check"].([]any)[0].(map[string]any)["q"] != "a" {
		t.Errorf("changing the copy changed the original: %+v", p)
	}
}

// TestScalingPolicyCheckCount: counts within [min, max] pass, others
// are ErrInvalid naming the bounds.
func TestScalingPolicyCheckCount(t *testing.T) {
	p := &ScalingPolicy{Min: new(int64(2)), Max: new(int64(4))}
	tests := []struct {
		count int64
		ok    bool
	}{{1, false}, {2, true}, {4, true}, {5, false}}
	for _, tt := range tests {
		err := p.CheckCount(tt.count)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("count %d: %v, want ok=%t", tt.count, err, tt.ok)
		}
	}
	var none *ScalingPolicy
	if err := none.CheckCount(100); err != nil {
		t.Errorf("no policy: %v", err)
	}
}

// TestJobUIValidate: links must be absolute http(s) URLs with labels.
func TestJobUIValidate(t *testing.T) {
	tests := []struct {
		url, label string
		ok         bool
	}{
		{"https://example.com/x", "a", true},
		{"http://10.0.0.1:8080", "a", true},
		{"javascript:alert(1)", "a", false},
		{"//example.com", "a", false},
		{"/relative", "a", false},
		{"https://example.com", "", false},
	}
	for _, tt := range tests {
		u := &JobUIConfig{Links: []*JobUILink{{Label: tt.label, URL: tt.url}}}
		if err := u.Validate(); (err == nil) != tt.ok {
			t.Errorf("link %q %q: %v, want ok=%t", tt.label, tt.url, err, tt.ok)
		}
	}
}
