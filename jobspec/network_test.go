package jobspec

import (
	"strings"
	"testing"
)

// inNetGroup places body lines inside group "g" (with task "t") of a valid
// job, starting at line 4, column 5.
func inNetGroup(body string) string {
	return "job \"x\" {\n" + // 1
		"  datacenters = [\"dc1\"]\n" + // 2
		"  group \"g\" {\n" + // 3
		"    " + body + "\n" + // 4
		"    task \"t\" {\n" +
		"      driver = \"docker\"\n" +
		"      config {\n        image = \"busybox\"\n        ports = [\"http\"]\n      }\n" +
		"    }\n  }\n}\n"
}

func TestParseNetworkErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // the first line of the error, or its start when it ends with "..."
	}{
		{
			name: "bridge mode",
			src:  inNetGroup("network {\n      mode = \"bridge\"\n      port \"http\" {}\n    }"),
			want: `job.hcl:5,14: Unsupported network mode; mode "bridge" is not supported yet: Drover has no network namespace per allocation; ...`,
		},
		{
			name: "cni mode",
			src:  inNetGroup("network {\n      mode = \"cni/mynet\"\n      port \"http\" {}\n    }"),
			want: `job.hcl:5,14: Unsupported network mode; mode "cni/mynet" is not supported: Drover has no CNI networking; use mode = "host".`,
		},
		{
			name: "duplicate label",
			src:  inNetGroup("network {\n      port \"http\" {}\n      port \"http\" {}\n    }"),
			want: `job.hcl:6,12: Duplicate port; A port labelled "http" is already defined in this group at line 5.`,
		},
		{
			name: "bad label",
			src:  inNetGroup("network {\n      port \"http\" {}\n      port \"my-port\" {}\n    }"),
			want: `job.hcl:6,7: Invalid port; port "my-port": label must be letters, digits and underscores.`,
		},
		{
			name: "static out of range",
			src:  inNetGroup("network {\n      port \"http\" {\n        static = 70000\n      }\n    }"),
			want: "job.hcl:6,18: ...",
		},
		{
			name: "to out of range",
			src:  inNetGroup("network {\n      port \"http\" {\n        to = -2\n      }\n    }"),
			want: "job.hcl:6,14: ...",
		},
		{
			name: "two networks",
			src:  inNetGroup("network {\n      port \"http\" {}\n    }\n    network {}"),
			want: "job.hcl:7,5: Duplicate network block; ...",
		},
		{
			name: "unknown host network",
			src:  inNetGroup("network {\n      port \"http\" {\n        host_network = \"public\"\n      }\n    }"),
			want: `job.hcl:5,7: Invalid port; port "http": host_network "public" is not supported yet: Drover has only the "default" network.`,
		},
		{
			name: "docker ports label unknown",
			src:  inNetGroup("network {\n      port \"api\" {}\n    }"),
			want: `job.hcl:1,1: Invalid job; job "x": group "g": task "t": config ports: "http" is not a port of the group's network`,
		},
		{
			name: "task and group share a label",
			src: "job \"x\" {\n  datacenters = [\"dc1\"]\n  group \"g\" {\n    network {\n      port \"http\" {}\n    }\n" +
				"    task \"t\" {\n      driver = \"raw_exec\"\n      resources {\n        network {\n          port \"http\" {}\n        }\n      }\n    }\n  }\n}\n",
			want: `job.hcl:11,16: Duplicate port; A port labelled "http" is already defined in this group at line 5.`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("job.hcl", []byte(tt.src))
			if err == nil {
				t.Fatal("Parse: got no error")
			}
			got := strings.SplitN(err.Error(), "\n", 2)[0]
			if prefix, ok := strings.CutSuffix(tt.want, "..."); ok {
				if !strings.HasPrefix(got, prefix) {
					t.Errorf("error:\ngot  %s\nwant %s", got, tt.want)
				}
			} else if got != tt.want {
				t.Errorf("error:\ngot  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestParseNetworkTooManyPorts(t *testing.T) {
	var b strings.Builder
	b.WriteString("network {\n")
	for i := range 65 {
		b.WriteString("      port \"p" + strings.Repeat("x", i) + "\" {}\n")
	}
	b.WriteString("    }")
	_, err := Parse("job.hcl", []byte(inNetGroup(b.String())))
	if err == nil || !strings.Contains(err.Error(), "Too many ports; A group asks for at most 64 ports.") {
		t.Fatalf("Parse: got %v, want too many ports", err)
	}
}

func TestParseNetworkJSON(t *testing.T) {
	job := func(networks string) string {
		return `{"Job": {"ID": "web", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "web", "Networks": ` + networks +
			`, "Tasks": [{"Name": "web", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]}}`
	}
	tests := []struct {
		name     string
		networks string
		want     string // "" parses
	}{
		{"host", `[{"Mode": "host", "DynamicPorts": [{"Label": "http"}]}]`, ""},
		{"bridge", `[{"Mode": "bridge", "DynamicPorts": [{"Label": "http"}]}]`, `network: mode "bridge" is not supported yet: Drover has no network namespace per allocation`},
		{"two networks", `[{"DynamicPorts": [{"Label": "a"}]}, {"DynamicPorts": [{"Label": "b"}]}]`, "a group has at most one network block, not 2"},
		{"null network", `[null]`, "network: must not be null"},
		{"dynamic with a value", `[{"DynamicPorts": [{"Label": "a", "Value": 80}]}]`, `port "a": a dynamic port has no value (80); use static`},
		{"static zero", `[{"ReservedPorts": [{"Label": "a"}]}]`, `port "a": static 0 is not a port (1 to 65535)`},
		{"static twice", `[{"ReservedPorts": [{"Label": "a", "Value": 80}, {"Label": "b", "Value": 80}]}]`, `static port 80 is also port "a"'s`},
		{"duplicate label", `[{"ReservedPorts": [{"Label": "a", "Value": 80}], "DynamicPorts": [{"Label": "a"}]}]`, `port "a": label used twice in the group`},
		{"unknown field", `[{"MBits": 10}]`, "MBits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("job.json", []byte(job(tt.networks)))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Parse: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Parse: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
