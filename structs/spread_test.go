package structs

import (
	"strings"
	"testing"
)

func dcSpread(weight int8, targets ...*SpreadTarget) *Spread {
	return &Spread{Attribute: "${node.datacenter}", Weight: weight, SpreadTarget: targets}
}

func TestSpreadValidate(t *testing.T) {
	tests := []struct {
		name   string
		spread *Spread
		// want is a substring of the error, "" for a valid spread.
		want string
	}{
		{name: "even", spread: dcSpread(50)},
		{name: "targets", spread: dcSpread(100, &SpreadTarget{"dc1", 70}, &SpreadTarget{"dc2", 30})},
		{name: "targets below 100", spread: dcSpread(1, &SpreadTarget{"dc1", 20})},
		{name: "zero percent", spread: dcSpread(10, &SpreadTarget{"dc1", 0})},
		{name: "missing attribute", spread: &Spread{Weight: 50}, want: "spread: missing attribute"},
		{name: "weight zero", spread: dcSpread(0), want: "weight 0 must be between 1 and 100"},
		{name: "weight negative", spread: dcSpread(-5), want: "weight -5 must be between 1 and 100"},
		{name: "weight above 100", spread: dcSpread(101), want: "weight 101 must be between 1 and 100"},
		{name: "sum above 100", spread: dcSpread(50, &SpreadTarget{"dc1", 70}, &SpreadTarget{"dc2", 40}), want: "target percents sum to 110, more than 100"},
		{name: "percent above 100", spread: dcSpread(50, &SpreadTarget{"dc1", 150}), want: `target "dc1" percent 150 must be between 0 and 100`},
		{name: "duplicate target", spread: dcSpread(50, &SpreadTarget{"dc1", 10}, &SpreadTarget{"dc1", 20}), want: `target "dc1" given twice`},
		{name: "empty target value", spread: dcSpread(50, &SpreadTarget{"", 10}), want: "target with no value"},
		{name: "null target", spread: dcSpread(50, nil), want: "null target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spread.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tt.want == "" && err != nil || !strings.Contains(got, tt.want) {
				t.Errorf("got error %q, want %q", got, tt.want)
			}
		})
	}
}

func TestJobValidateSpreads(t *testing.T) {
	j := testJob()
	j.Spreads = []*Spread{dcSpread(50), dcSpread(20)}
	j.TaskGroups[0].Spreads = []*Spread{dcSpread(0)}
	err := j.Validate()
	if err == nil {
		t.Fatal("got no error, want the job's and the group's spread problems")
	}
	for _, want := range []string{
		`job "train": spread "${node.datacenter}": attribute given in two spread blocks`,
		`job "train": group "g": spread "${node.datacenter}": weight 0 must be between 1 and 100`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to contain %q", err, want)
		}
	}
}

func TestSpreadCopyIsDeep(t *testing.T) {
	j := testJob()
	j.Spreads = []*Spread{dcSpread(50, &SpreadTarget{"dc1", 70})}
	j.TaskGroups[0].Spreads = []*Spread{{Attribute: "${meta.rack}", Weight: 10}}
	c := j.Copy()
	c.Spreads[0].SpreadTarget[0].Percent = 10
	c.Spreads[0].Weight = 1
	c.TaskGroups[0].Spreads[0].Attribute = "x"
	if got := j.Spreads[0].SpreadTarget[0].Percent; got != 70 {
		t.Errorf("got original target percent %d after changing the copy, want 70", got)
	}
	if got := j.Spreads[0].Weight; got != 50 {
		t.Errorf("got original weight %d after changing the copy, want 50", got)
	}
	if got := j.TaskGroups[0].Spreads[0].Attribute; got != "${meta.rack}" {
		t.Errorf("got original group spread attribute %q after changing the copy, want ${meta.rack}", got)
	}
}

func TestCheckShapeSpreads(t *testing.T) {
	tests := []struct {
		name string
		job  func(*Job)
	}{
		{"nil job spread", func(j *Job) { j.Spreads = []*Spread{nil} }},
		{"nil job target", func(j *Job) { j.Spreads = []*Spread{dcSpread(50, nil)} }},
		{"nil group spread", func(j *Job) { j.TaskGroups[0].Spreads = []*Spread{nil} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := testJob()
			tt.job(j)
			if err := j.CheckShape(); err == nil || !strings.Contains(err.Error(), "spread") {
				t.Errorf("got %v, want an error about a spread", err)
			}
		})
	}
}
