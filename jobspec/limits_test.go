package jobspec

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestParseLimits checks that each limit a job file can pass is refused
// with the file's position and the limit's setting named.
func TestParseLimits(t *testing.T) {
	deepList := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"100000-deep list", inTask(`config { args = ` + deepList(100000) + ` }`), "Nested too deep; blocks, lists, objects, parentheses and templates nest deeper than the limit 64 (limits.hcl_max_depth)"},
		{"deep templates", inTask(`config { args = "` + strings.Repeat("${", 100) + `x` + strings.Repeat("}", 100) + `" }`), "(limits.hcl_max_depth)"},
		{"deep JSON", `{"Job": {"ID": "x", "Meta": ` + strings.Repeat(`{"a": `, 100) + `1` + strings.Repeat("}", 100) + `}}`, "job.json:1,1: Nested too deep; objects and arrays nest deeper than the limit 64 (limits.json_max_depth)"},
		{"count 1e9", `job "x" {` + "\n" + `group "g" {` + "\n" + `count = 1000000000` + "\n" + `task "t" { driver = "raw_exec" }` + "\n}\n}", `job.hcl:1,1: Invalid job; job "x": group "g": count 1000000000 over the limit 10000 (limits.job_max_count)`},
		{"config 40 deep", inTask(`config { args = ` + deepList(40) + ` }`), "(limits.task_config_max_depth)"},
		{"gpu count 0", inDevice(`count = 0`), "count"},
		{"gpu count 2^63", inDevice(`count = 9223372036854775808`), "count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "job.hcl"
			if strings.HasPrefix(tt.src, "{") {
				name = "job.json"
			}
			job, err := ParseLimited(name, []byte(tt.src), structs.Limits{})
			if err == nil || job != nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseLimited = %v, %v; want an error containing %q", job, err, tt.want)
			}
		})
	}
}
