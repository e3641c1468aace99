package acl

import (
	"slices"
	"strings"
)

// ruleSet holds merged rules of one kind by name: exact names in a map,
// glob patterns apart, sorted so that ties break the same way every time.
type ruleSet[T any] struct {
	exact map[string]T
	globs []globRule[T]
}

type globRule[T any] struct {
	pattern string
	literal int // bytes of pattern that are not wildcards
	value   T
}

// newRuleSet splits merged rules into exact names and globs.
func newRuleSet[T any](merged map[string]T) ruleSet[T] {
	rs := ruleSet[T]{exact: map[string]T{}}
	for name, v := range merged {
		if !strings.Contains(name, "*") {
			rs.exact[name] = v
			continue
		}
		rs.globs = append(rs.globs, globRule[T]{pattern: name, literal: len(name) - strings.Count(name, "*"), value: v})
	}
	slices.SortFunc(rs.globs, func(a, b globRule[T]) int { return strings.Compare(a.pattern, b.pattern) })
	return rs
}

// match returns the rule for name: the one named exactly, else the
// glob whose wildcards match the fewest characters of name (the longest
// literal part); among equals, the first pattern in byte order.
func (rs ruleSet[T]) match(name string) (T, bool) {
	if v, ok := rs.exact[name]; ok {
		return v, true
	}
	var (
		best  T
		found bool
		most  = -1
	)
	for _, g := range rs.globs {
		if g.literal > most && globMatch(g.pattern, name) {
			best, found, most = g.value, true, g.literal
		}
	}
	return best, found
}

// any reports whether some rule, exact or glob, satisfies ok.
func (rs ruleSet[T]) any(ok func(T) bool) bool {
	for _, v := range rs.exact {
		if ok(v) {
			return true
		}
	}
	for _, g := range rs.globs {
		if ok(g.value) {
			return true
		}
	}
	return false
}

// globMatch reports whether name matches pattern, where * matches any run
// of bytes, empty included. It backtracks only to the last star, without
// recursion: O(len(pattern) * len(name)) at worst.
func globMatch(pattern, name string) bool {
	p, n := 0, 0
	star, resume := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, resume = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0:
			resume++
			p, n = star+1, resume
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
