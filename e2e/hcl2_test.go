package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// hcl2Job uses Nomad's HCL2 features: a variable without a default and
// with a validation rule, a variable set from a var file, one from the
// environment, locals and functions, no datacenters (Nomad's default
// "*"), and runtime interpolations that the client resolves.
const hcl2Job = `
variable "greeting" {
  type = string
  validation {
    condition     = length(var.greeting) > 1
    error_message = "greeting must have at least 2 characters."
  }
}

variable "suffix" {
  type    = string
  default = "from-default"
}

variable "count_from_env" {
  type    = number
  default = 1
}

locals {
  msg = "${upper(var.greeting)}-${var.suffix}-${var.count_from_env * 2}"
}

job "hcl2" {
  type = "batch"
  meta {
    x = "job-meta"
  }

  group "g" {
    task "echo" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo MSG=${local.msg} NODE=${node.unique.name} META=${NOMAD_META_x} KERNEL=${attr.kernel.name} DC=${node.datacenter} ENV=$WHERE"]
      }
      env {
        WHERE = "${node.unique.id}"
      }
    }
  }
}
`

// TestE2E_HCL2Variables runs a job with variables through drover job
// run -var/-var-file on a dev agent, and checks what the task printed:
// parse-time values (var, local, functions) and client-time ones (node
// name, node meta and attributes, NOMAD_META_*).
func TestE2E_HCL2Variables(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	cfg := writeFile(t, dir, "ports.hcl", fmt.Sprintf("ports {\n  http = %d\n  rpc = %d\n  serf = %d\n}\n", ports[0], ports[1], ports[2]))
	a := startAgent(t, ports[0], "-dev", "-config", cfg)

	job := writeFile(t, dir, "hcl2.nomad.hcl", hcl2Job)
	vars := writeFile(t, dir, "prod.vars.hcl", `suffix = "from-file"`+"\n")
	env := []string{"DROVER_ADDR=" + a.addr, "NOMAD_VAR_count_from_env=21"}

	// Missing and invalid values are refused locally, naming the variable.
	r := runCLI(t, env, "job", "validate", job)
	if r.code != 1 || !strings.Contains(r.stderr, "hcl2.nomad.hcl:2,1: Missing value for variable; var.greeting") {
		t.Fatalf("validate without greeting: exit %d, stderr %q; want the missing variable named at 2,1", r.code, r.stderr)
	}
	r = runCLI(t, env, "job", "validate", "-var", "greeting=x", job)
	if r.code != 1 || !strings.Contains(r.stderr, "greeting must have at least 2 characters.") {
		t.Fatalf("validate with a bad greeting: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, env, "job", "validate", "-var", "greeting=hi", "-var", "nope=1", job)
	if r.code != 1 || !strings.Contains(r.stderr, `declares no variable "nope"`) {
		t.Fatalf("validate with an undeclared -var: exit %d, stderr %q", r.code, r.stderr)
	}

	r = runCLI(t, env, "job", "run", "-var", "greeting=ignored", "-var-file", vars, "-var", "greeting=hello", job)
	if r.code != 0 {
		t.Fatalf("job run: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	done := a.waitAlloc("hcl2", "complete", "failed")
	if done.ClientStatus != "complete" {
		t.Fatalf("allocation: got %s, want complete", done.ClientStatus)
	}
	var node struct{ ID, Name, Datacenter string }
	if code := a.getJSON("/v1/node/"+done.NodeID, &node); code != 200 || node.Name == "" {
		t.Fatalf("node %s: status %d, %+v", done.NodeID, code, node)
	}
	logs := a.drover("alloc", "logs", done.ID)
	want := fmt.Sprintf("MSG=HELLO-from-file-42 NODE=%s META=job-meta KERNEL=linux DC=%s ENV=%s", node.Name, node.Datacenter, node.ID)
	if logs.code != 0 || strings.TrimSpace(logs.stdout) != want {
		t.Fatalf("task printed %q (exit %d, %s), want %q", logs.stdout, logs.code, logs.stderr, want)
	}

	// The job as stored keeps the runtime interpolations for the client.
	var stored struct {
		Datacenters []string
		TaskGroups  []struct {
			Tasks []struct{ Config map[string]any }
		}
	}
	if code := a.getJSON("/v1/job/hcl2", &stored); code != 200 {
		t.Fatalf("read job: %d", code)
	}
	args, _ := json.Marshal(stored.TaskGroups[0].Tasks[0].Config["args"])
	if !strings.Contains(string(args), "NODE=${node.unique.name}") || len(stored.Datacenters) != 1 || stored.Datacenters[0] != "*" {
		t.Errorf("stored job: datacenters %v, args %s; want [*] and runtime interpolations kept", stored.Datacenters, args)
	}

	// /v1/jobs/parse takes Nomad's Variables (var-file text) and refuses
	// file functions: the agent reads none of its files for a job.
	body, _ := json.Marshal(map[string]any{"JobHCL": hcl2Job, "Variables": "greeting = \"parsed\"\n"})
	code, out := a.do("POST", "/v1/jobs/parse", string(body))
	if code != 200 || !strings.Contains(out, "MSG=PARSED-from-default-2") {
		t.Fatalf("jobs/parse: %d %.400s; want the variables applied", code, out)
	}
	body, _ = json.Marshal(map[string]any{"JobHCL": strings.Replace(hcl2Job, `"${upper(var.greeting)}`, `"${file("/etc/hostname")}`, 1), "Variables": `greeting = "x1"`})
	code, out = a.do("POST", "/v1/jobs/parse", string(body))
	if code != 400 || !strings.Contains(out, "file functions are available only") {
		t.Fatalf("jobs/parse with file(): %d %.400s; want 400 refusing file functions", code, out)
	}
}
