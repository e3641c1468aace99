package structs

import (
	"errors"
	"fmt"
	"strings"
)

// Spread weight bounds and the weight of a spread block that names none
// (Nomad's).
const (
	SpreadMinWeight     = 1
	SpreadMaxWeight     = 100
	SpreadDefaultWeight = 50
)

// Spread asks the scheduler to distribute a group's allocations over the
// values of a node attribute: by the targets' percentages when there are
// targets, else evenly. Field names follow Nomad's API.
type Spread struct {
	// Attribute is the node attribute, e.g. "${node.datacenter}".
	Attribute string
	// Weight (1 to 100) is the spread's importance relative to the job's
	// other spreads.
	Weight int8
	// SpreadTarget lists the desired share of allocations per value.
	// Values it does not name share what the percentages leave of 100.
	SpreadTarget []*SpreadTarget
}

// SpreadTarget is the desired share of a spread's allocations on nodes
// whose attribute has Value.
type SpreadTarget struct {
	Value   string
	Percent uint8
}

func (s *Spread) String() string {
	targets := make([]string, 0, len(s.SpreadTarget))
	for _, t := range s.SpreadTarget {
		if t != nil {
			targets = append(targets, fmt.Sprintf("%s=%d%%", t.Value, t.Percent))
		}
	}
	out := fmt.Sprintf("spread %s (weight %d)", s.Attribute, s.Weight)
	if len(targets) > 0 {
		out += " " + strings.Join(targets, ", ")
	}
	return out
}

// Validate checks the attribute, the weight, and the targets: known
// values, unique, each percent at most 100 and their sum too.
func (s *Spread) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if strings.TrimSpace(s.Attribute) == "" {
		add("spread: missing attribute")
	}
	if s.Weight < SpreadMinWeight || s.Weight > SpreadMaxWeight {
		add("spread %q: weight %d must be between %d and %d", s.Attribute, s.Weight, SpreadMinWeight, SpreadMaxWeight)
	}
	seen := map[string]bool{}
	sum := 0
	for _, t := range s.SpreadTarget {
		switch {
		case t == nil:
			add("spread %q: null target", s.Attribute)
			continue
		case t.Value == "":
			add("spread %q: target with no value", s.Attribute)
		case seen[t.Value]:
			add("spread %q: target %q given twice", s.Attribute, t.Value)
		}
		seen[t.Value] = true
		if t.Percent > 100 {
			add("spread %q: target %q percent %d must be between 0 and 100", s.Attribute, t.Value, t.Percent)
		}
		sum += int(t.Percent)
	}
	if sum > 100 {
		add("spread %q: target percents sum to %d, more than 100", s.Attribute, sum)
	}
	return errors.Join(errs...)
}

// Copy returns a deep copy of the spread.
func (s *Spread) Copy() *Spread {
	if s == nil {
		return nil
	}
	c := *s
	if s.SpreadTarget != nil {
		c.SpreadTarget = make([]*SpreadTarget, len(s.SpreadTarget))
		for i, t := range s.SpreadTarget {
			if t != nil {
				tc := *t
				c.SpreadTarget[i] = &tc
			}
		}
	}
	return &c
}

func copySpreads(in []*Spread) []*Spread {
	if in == nil {
		return nil
	}
	out := make([]*Spread, len(in))
	for i, s := range in {
		out[i] = s.Copy()
	}
	return out
}

// validateSpreads checks a job's or group's spreads, and that no two
// spread over the same attribute.
func validateSpreads(spreads []*Spread) error {
	var errs []error
	seen := map[string]bool{}
	for _, s := range spreads {
		if s == nil {
			errs = append(errs, errors.New("spread: null spread"))
			continue
		}
		if err := s.Validate(); err != nil {
			errs = append(errs, err)
		}
		if s.Attribute != "" && seen[s.Attribute] {
			errs = append(errs, fmt.Errorf("spread %q: attribute given in two spread blocks", s.Attribute))
		}
		seen[s.Attribute] = true
	}
	return errors.Join(errs...)
}

// spreadsHaveNil reports whether a spread or one of its targets is nil.
func spreadsHaveNil(spreads []*Spread) bool {
	for _, s := range spreads {
		if s == nil || hasNil(s.SpreadTarget) {
			return true
		}
	}
	return false
}
