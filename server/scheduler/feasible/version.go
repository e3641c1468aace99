package feasible

import (
	"cmp"
	"regexp"
	"strconv"
	"strings"
)

// version is a parsed "v1.2.3-rc.1+build": numeric segments and an
// optional pre-release. Build metadata is dropped.
type version struct {
	segments []int
	pre      string
}

var versionLikeRe = regexp.MustCompile(`^v?\d+\.\d+(\.\d+)?$`)

// looksLikeVersion reports whether s is "a.b" or "a.b.c", the shapes that
// order as versions in <, <=, >, >= constraints.
func looksLikeVersion(s string) bool { return versionLikeRe.MatchString(strings.TrimSpace(s)) }

func parseVersion(s string) (version, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	var v version
	if i := strings.IndexByte(s, '-'); i >= 0 {
		s, v.pre = s[:i], s[i+1:]
		if v.pre == "" {
			return version{}, false
		}
	}
	for _, part := range strings.Split(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return version{}, false
		}
		v.segments = append(v.segments, n)
	}
	return v, true
}

// compareVersions orders versions segment by segment (missing segments
// are 0); a pre-release sorts before its release, and pre-release
// identifiers compare numerically when both are numbers.
func compareVersions(a, b version) int {
	for i := range max(len(a.segments), len(b.segments)) {
		if c := cmp.Compare(segment(a.segments, i), segment(b.segments, i)); c != 0 {
			return c
		}
	}
	switch {
	case a.pre == b.pre:
		return 0
	case a.pre == "":
		return 1
	case b.pre == "":
		return -1
	}
	return comparePre(a.pre, b.pre)
}

func segment(s []int, i int) int {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func comparePre(a, b string) int {
	ap, bp := strings.Split(a, "."), strings.Split(b, ".")
	for i := range min(len(ap), len(bp)) {
		an, aerr := strconv.Atoi(ap[i])
		bn, berr := strconv.Atoi(bp[i])
		var c int
		switch {
		case aerr == nil && berr == nil:
			c = cmp.Compare(an, bn)
		case aerr == nil:
			c = -1
		case berr == nil:
			c = 1
		default:
			c = strings.Compare(ap[i], bp[i])
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(ap), len(bp))
}

// versionRange is a conjunction of clauses such as ">= 1.2, < 2.0".
type versionRange []versionClause

type versionClause struct {
	op string
	v  version
}

// parseVersionRange parses comma-separated clauses, each an operator
// (=, ==, !=, >, >=, <, <=, ~>; = when absent) and a version. "~> 1.2"
// means ">= 1.2, < 2" and "~> 1.2.3" means ">= 1.2.3, < 1.3".
func parseVersionRange(s string) (versionRange, bool) {
	var vr versionRange
	for _, clause := range strings.Split(s, ",") {
		clause = strings.TrimSpace(clause)
		op := "="
		for _, candidate := range []string{"~>", ">=", "<=", "!=", "==", ">", "<", "="} {
			if strings.HasPrefix(clause, candidate) {
				op, clause = candidate, strings.TrimSpace(clause[len(candidate):])
				break
			}
		}
		v, ok := parseVersion(clause)
		if !ok {
			return nil, false
		}
		if op != "~>" {
			vr = append(vr, versionClause{op: op, v: v})
			continue
		}
		vr = append(vr, versionClause{op: ">=", v: v})
		if len(v.segments) > 1 {
			upper := version{segments: append([]int(nil), v.segments[:len(v.segments)-1]...)}
			upper.segments[len(upper.segments)-1]++
			vr = append(vr, versionClause{op: "<", v: upper})
		}
	}
	return vr, len(vr) > 0
}

func (vr versionRange) matches(v version) bool {
	for _, c := range vr {
		r := compareVersions(v, c.v)
		var ok bool
		switch c.op {
		case "=", "==":
			ok = r == 0
		case "!=":
			ok = r != 0
		default:
			ok = orderHolds(c.op, r)
		}
		if !ok {
			return false
		}
	}
	return true
}
