package structs

import "strings"

// DefaultDatacenters is what a job without datacenters runs in: every
// datacenter, as in Nomad.
var DefaultDatacenters = []string{"*"}

// MatchDatacenter reports whether the datacenter dc matches pattern, a
// job's datacenters entry: "*" matches any run of characters (none
// included), anything else matches itself ("dc*", "*-west", "*").
func MatchDatacenter(pattern, dc string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == dc
	}
	rest, ok := strings.CutPrefix(dc, parts[0])
	if !ok {
		return false
	}
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return len(rest) >= len(last) && strings.HasSuffix(rest, last)
}
