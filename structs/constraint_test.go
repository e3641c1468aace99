package structs

import (
	"strings"
	"testing"
)

func TestConstraintValidateDistinctProperty(t *testing.T) {
	tests := []struct {
		name    string
		c       Constraint
		wantErr string // "" = valid
	}{
		{"default count", Constraint{LTarget: "${meta.rack}", Operand: ConstraintDistinctProperty}, ""},
		{"count 2", Constraint{LTarget: "${meta.rack}", Operand: ConstraintDistinctProperty, RTarget: "2"}, ""},
		{"no attribute", Constraint{Operand: ConstraintDistinctProperty, RTarget: "2"}, "missing attribute"},
		{"zero", Constraint{LTarget: "${meta.rack}", Operand: ConstraintDistinctProperty, RTarget: "0"}, `distinct_property value "0" must be a count of 1 or more`},
		{"not a number", Constraint{LTarget: "${meta.rack}", Operand: ConstraintDistinctProperty, RTarget: "two"}, `distinct_property value "two"`},
		{"is_set ignores the value", Constraint{LTarget: "${meta.rack}", Operand: ConstraintAttributeIsSet, RTarget: "two"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if (tt.wantErr == "") != (err == nil) || !strings.Contains(got, tt.wantErr) {
				t.Errorf("Validate() = %q, want an error containing %q", got, tt.wantErr)
			}
		})
	}
}
