package agent

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// readmeHCL returns the README's ```hcl blocks: the agent config
// examples users copy (and some job files, which the parser must refuse
// with a position).
func readmeHCL(tb testing.TB) []string {
	src, err := os.ReadFile("../../README.md")
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?s)```hcl\n(.*?)```").FindAllStringSubmatch(string(src), -1) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		tb.Fatal("README.md has no hcl blocks")
	}
	return out
}

// hostileConfigs are inputs that cost, or could cost, unbounded stack,
// memory or time, with n levels where they nest: the plain test uses
// 100000 (deep brackets overflowed the stack, fatally, before ParseConfig
// checked depth), the fuzz seeds 200 (over the limit, quick to mutate).
func hostileConfigs(n int) []string {
	return []string{
		"client { meta = " + strings.Repeat("{a = ", n) + strings.Repeat("}", n) + " }",
		"client { servers = " + strings.Repeat("[", n) + strings.Repeat("]", n) + " }",
		"name = " + strings.Repeat("(", n) + `"x"` + strings.Repeat(")", n),
		`name = "` + strings.Repeat("${", n) + "x" + strings.Repeat("}", n) + `"`,
		strings.Repeat("server {\n", n) + strings.Repeat("}\n", n),
		"name = " + strings.Repeat("-", n) + "1",
		"name = " + strings.Repeat("!", n) + "true",
		"name = " + strings.Repeat("true ? 1 : ", n) + "1",
		"name = " + strings.Repeat("1 + ", n) + "1",
		"name = a" + strings.Repeat(".b", n),
		"name = a" + strings.Repeat("[0]", n),
		"name = 1e-99999999",
		"server { num_schedulers = 1E+99999999999999999999 }",
		"server { bootstrap_expect = 99999999999999999999999999999999999999 }",
		"server { num_schedulers = 1e400 }",
		"client { gc_disk_usage_threshold = -1e-400 }",
		"ports { http = -9223372036854775809 }",
		"server { enabled = null }\nclient { servers = null\n meta = null }",
		"client { simulated_gpu { count = null } }",
		`client { simulated_gpu { count = 1e10  memory = "99999999999999999999 PiB" } }`,
		"limits { task_config_max_depth = 9223372036854775807 }",
		`plugin "raw_exec" { config { enabled = null } }`,
		`client { gpu_sharing { model "" { mode = null } gpu "GPU-x" {} } }`,
		"name = \"\x00\xff\"",
		"a = <<EOT\n" + strings.Repeat("x", 10000),
	}
}

// FuzzParseConfig feeds arbitrary bytes to the agent config parser. Any
// input must give a config or an error, never both and never neither;
// a parse error names the file, and a config that parses must merge and
// validate without panicking.
func FuzzParseConfig(f *testing.F) {
	for _, src := range readmeHCL(f) {
		f.Add(src)
	}
	f.Add(issueConfig)
	for _, src := range hostileConfigs(200) {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		c, err := ParseConfig("fuzz.hcl", []byte(src))
		switch {
		case err != nil && c != nil:
			t.Fatalf("got a config and an error %v", err)
		case err == nil && c == nil:
			t.Fatal("got neither a config nor an error")
		case err != nil && !strings.Contains(err.Error(), "fuzz.hcl:"):
			t.Fatalf("error %q does not name the file and position", err)
		case err == nil:
			cfg := DefaultConfig()
			cfg.Merge(c)
			_ = cfg.Validate()
		}
	})
}

// TestParseConfigHostile runs the hostile seeds as a plain test, so
// `go test` checks them without -fuzz: each is refused with a position
// or parsed, quickly and without a crash. "name = 1e-99999999" hung
// (gohcl printed its 10^8 digits, in quadratic time) before checkNumbers.
func TestParseConfigHostile(t *testing.T) {
	for i, src := range hostileConfigs(100_000) {
		c, err := ParseConfig("hostile.hcl", []byte(src))
		if err == nil {
			cfg := DefaultConfig()
			cfg.Merge(c)
			_ = cfg.Validate()
			continue
		}
		if !strings.Contains(err.Error(), "hostile.hcl:") {
			t.Errorf("seed %d: error %q names no position", i, err)
		}
	}
}

// TestCheckNumbers: exponents within float64's range pass, larger ones
// are refused at the literal.
func TestCheckNumbers(t *testing.T) {
	tests := []struct {
		src  string
		want string
	}{
		{"client { gc_disk_usage_threshold = 8.5e1 }", ""},
		{"server { num_schedulers = 4E+0 }", ""},
		{"client { gc_disk_usage_threshold = 1e-400 }", ""},
		{"name = 1e-401", "a.hcl:1,8: number 1e-401: exponent beyond ±400"},
		{"x = [1,\n  2E+99999999999999999999]", "a.hcl:2,3: number 2E+99999999999999999999"},
	}
	for _, tt := range tests {
		err := checkNumbers("a.hcl", []byte(tt.src))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("checkNumbers(%q) = %q, want %q", tt.src, got, tt.want)
		}
	}
}
