package jobspec

import (
	"strings"
	"testing"
)

// TestServiceRefusals checks that Consul, Vault, identity and CSI blocks,
// Consul services and unknown check types are refused at their position
// with a message naming the integration.
func TestServiceRefusals(t *testing.T) {
	const head = "job \"j\" {\n  datacenters = [\"dc1\"]\n"
	task := func(extra string) string {
		return head + "  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n" + extra + "    }\n  }\n}\n"
	}
	tests := []struct {
		name, src, want string
	}{
		{"consul provider", head + `  group "g" {
    service {
      name     = "x"
      provider = "consul"
    }
    task "t" { driver = "raw_exec" }
  }
}
`, `j.hcl:6,18: Unsupported service provider; service "x": provider "consul": Drover has no Consul integration; use provider = "nomad".`},
		{"grpc check", task("      service {\n        name = \"x\"\n        port = 80\n        check {\n          type = \"grpc\"\n          interval = \"1s\"\n          timeout = \"1s\"\n        }\n      }\n"),
			`j.hcl:10,18: Unsupported check type; Check type "grpc" is not supported`},
		{"job vault", head + "  vault {}\n  group \"g\" {\n    task \"t\" { driver = \"raw_exec\" }\n  }\n}\n",
			"j.hcl:3,3: Unsupported integration; vault: Drover has no Vault integration; use Drover variables (drover var) and template's nomadVar instead."},
		{"group consul", head + "  group \"g\" {\n    consul {}\n    task \"t\" { driver = \"raw_exec\" }\n  }\n}\n",
			"j.hcl:4,5: Unsupported integration; consul: Drover has no Consul integration"},
		{"group vault", head + "  group \"g\" {\n    vault {}\n    task \"t\" { driver = \"raw_exec\" }\n  }\n}\n",
			"j.hcl:4,5: Unsupported integration; vault: Drover has no Vault integration"},
		{"task vault", task("      vault {}\n"), "j.hcl:6,7: Unsupported integration; vault: Drover has no Vault integration"},
		{"task identity", task("      identity {}\n"), "j.hcl:6,7: Unsupported integration; identity: Drover has no workload identity integration"},
		{"job identity", head + "  identity {}\n  group \"g\" {\n    task \"t\" { driver = \"raw_exec\" }\n  }\n}\n",
			"j.hcl:3,3: Unsupported integration; identity:"},
		{"task csi_plugin", task("      csi_plugin {}\n"), "j.hcl:6,7: Unsupported integration; csi_plugin: Drover has no CSI integration"},
		{"task consul", task("      consul {}\n"), "j.hcl:6,7: Unsupported integration; consul: Drover has no Consul integration"},
		{"connect", task("      service {\n        name = \"x\"\n        connect {}\n      }\n"), `j.hcl:8,9: Unsupported integration; connect: Drover has no Consul integration`},
		{"check without interval", task("      service {\n        name = \"x\"\n        port = 80\n        check {\n          type = \"tcp\"\n        }\n      }\n"),
			"j.hcl:9,9: Missing required argument; A check needs an interval and a timeout."},
		{"unknown port label", task("      service {\n        name = \"x\"\n        port = \"http\"\n      }\n"),
			`service "x": port "http" is neither a port number nor a port label of the group's network`},
		{"script without task driver", task("      service {\n        name = \"x\"\n        check {\n          type = \"script\"\n          interval = \"1s\"\n          timeout = \"1s\"\n        }\n      }\n"),
			`check "service: \"x\" check": a script check needs a command`},
		{"short interval", task("      service {\n        name = \"x\"\n        port = 1\n        check {\n          type = \"tcp\"\n          interval = \"100ms\"\n          timeout = \"1s\"\n        }\n      }\n"),
			"interval 100ms must be between 1s and 24h0m0s"},
		{"bad name", task("      service {\n        name = \"-x\"\n      }\n"), `service "-x": name must be 1-63 letters`},
		{"http without path", task("      service {\n        name = \"x\"\n        port = 1\n        check {\n          type = \"http\"\n          interval = \"1s\"\n          timeout = \"1s\"\n        }\n      }\n"),
			"an http check needs a path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("j.hcl", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// TestServiceJSONConsulRefused checks that a JSON job (the API's path)
// with a Consul service is refused by validation, not dropped.
func TestServiceJSONConsulRefused(t *testing.T) {
	src := `{"Job":{"ID":"j","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Services":[{"Name":"x","Provider":"consul"}],"Tasks":[{"Name":"t","Driver":"raw_exec"}]}]}}`
	_, err := Parse("j.json", []byte(src))
	want := `service "x": provider "consul": Drover has no Consul integration; use provider = "nomad"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Parse error = %v, want it to contain %q", err, want)
	}
}

// TestServiceDefaultsToNomadProvider checks that a service without a
// provider registers in Drover's registry.
func TestServiceDefaultsToNomadProvider(t *testing.T) {
	src := "job \"j\" {\n  datacenters = [\"dc1\"]\n  group \"g\" {\n    service {\n      name = \"x\"\n      port = 8080\n    }\n    task \"t\" { driver = \"raw_exec\" }\n  }\n}\n"
	job, err := Parse("j.hcl", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := job.TaskGroups[0].Services[0].Provider; got != "nomad" {
		t.Errorf("provider = %q, want nomad", got)
	}
}

// TestServiceNomadJSON: a service as Nomad's tools send it (canonicalized,
// Consul-only fields empty, cluster "default") is accepted.
func TestServiceNomadJSON(t *testing.T) {
	src := `{"Job":{"ID":"j","Name":"j","Datacenters":["dc1"],"TaskGroups":[{"Name":"g",
"Services":[{"Name":"","Provider":"nomad","Cluster":"default","AddressMode":"auto","OnUpdate":"require_healthy","PortLabel":"8080",
  "Tags":null,"CanaryTags":null,"EnableTagOverride":false,"Connect":null,"Meta":null,"CanaryMeta":null,"TaggedAddresses":null,
  "TaskName":"","Identity":null,"Weights":null,"Kind":"","CheckRestart":{"Limit":3,"Grace":1000000000,"IgnoreWarnings":false},
  "Checks":[{"Name":"up","Type":"http","Path":"/","Protocol":"","PortLabel":"","Expose":false,"AddressMode":"","Advertise":"",
    "Interval":10000000000,"Timeout":2000000000,"InitialStatus":"","Notes":"","TLSServerName":"","TLSSkipVerify":false,"Header":null,
    "Method":"","CheckRestart":null,"GRPCService":"","GRPCUseTLS":false,"TaskName":"","SuccessBeforePassing":0,
    "FailuresBeforeCritical":0,"FailuresBeforeWarning":0,"Body":"","OnUpdate":"require_healthy"}]}],
"Tasks":[{"Name":"t","Driver":"raw_exec"}]}]}}`
	job, err := Parse("j.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s := job.TaskGroups[0].Services[0]
	if s.Name != "j-g" || s.Checks[0].CheckRestart == nil || s.Checks[0].CheckRestart.Limit != 3 {
		t.Errorf("service %+v (check restart %+v), want name j-g and the service's check_restart", s, s.Checks[0].CheckRestart)
	}
}
