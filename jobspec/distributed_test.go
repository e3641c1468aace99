package jobspec

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

func distributedJob(block string) string {
	return "job \"x\" {\n" + // 1
		"  datacenters = [\"dc1\"]\n" + // 2
		"  group \"g\" {\n" + // 3
		"    count = 2\n" + // 4
		"    " + block + "\n" + // 5
		"    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n"
}

// TestParseDistributed: the block parses, defaults fill, and the group
// gets its implicit rendezvous port once canonicalized.
func TestParseDistributed(t *testing.T) {
	job, err := Parse("job.hcl", []byte(distributedJob("distributed {\n      framework = \"torch\"\n      procs_per_node = 8\n    }")))
	if err != nil {
		t.Fatal(err)
	}
	tg := job.TaskGroups[0]
	if d := tg.Distributed; d == nil || d.Framework != "torch" || d.ProcsPerNode != 8 {
		t.Fatalf("distributed = %+v", tg.Distributed)
	}
	job.Canonicalize()
	job.Canonicalize() // twice: one port
	_, dyn := tg.AskedPorts()
	if len(dyn) != 1 || dyn[0].Label != structs.RendezvousPortLabel {
		t.Errorf("dynamic ports %+v, want one %q", dyn, structs.RendezvousPortLabel)
	}
	if err := job.Validate(); err != nil {
		t.Errorf("validate: %v", err)
	}
	job, err = Parse("job.hcl", []byte(distributedJob(`distributed {}`)))
	if err != nil {
		t.Fatal(err)
	}
	if d := job.TaskGroups[0].Distributed; d.Framework != "none" || d.ProcsPerNode != 1 {
		t.Errorf("defaults: %+v, want none and 1", d)
	}
}

func TestParseDistributedErrors(t *testing.T) {
	for src, want := range map[string]string{
		`distributed { framework = "horovod" }`:                                     `job.hcl:5,31: Invalid distributed framework; distributed framework "horovod" is not one of torch, jax, mpi, none.`,
		`distributed { procs_per_node = 0 }`:                                        `job.hcl:5,36:`,
		"distributed {\n      framework = \"jax\"\n      procs_per_node = 2\n    }": `job.hcl:5,5: Invalid distributed block; distributed procs_per_node > 1 is not supported for jax`,
		`distributed { ranks = 2 }`:                                                 `job.hcl:5,19:`,
	} {
		_, err := Parse("job.hcl", []byte(distributedJob(src)))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %s...", src, err, want)
		}
	}
}

func TestParseDistributedJSON(t *testing.T) {
	src := `{"Job": {"ID": "x", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Count": 2,
		"Distributed": {"Framework": "mpi", "ProcsPerNode": 2},
		"Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}}`
	job, err := Parse("job.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if d := job.TaskGroups[0].Distributed; d == nil || d.Framework != "mpi" || d.ProcsPerNode != 2 {
		t.Errorf("distributed = %+v", d)
	}
}
