package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// lifecycleJob is the "a prestart task and a poststart sidecar"
// and "a host volume", as a Nomad user writes them: the prestart task
// must have exited before the main task starts (the main task checks its
// marker), the poststart sidecar runs beside the main task (the main
// task waits for its marker), and the main task writes into the host
// volume mounted at vol (raw_exec: a link in its task dir).
const lifecycleJob = `job "lifecycle" {
  type        = "batch"
  datacenters = ["dc1"]

  group "g" {
    volume "shared" {
      type   = "host"
      source = "data"
    }

    restart {
      attempts = 0
      mode     = "fail"
    }

    task "init" {
      driver = "raw_exec"
      lifecycle {
        hook = "prestart"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "sleep 0.3; touch \"$NOMAD_ALLOC_DIR/data/init\""]
      }
    }

    task "side" {
      driver = "raw_exec"
      lifecycle {
        hook    = "poststart"
        sidecar = true
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "touch \"$NOMAD_ALLOC_DIR/data/side\"; exec sleep 300"]
      }
    }

    task "main" {
      driver = "raw_exec"
      volume_mount {
        volume      = "shared"
        destination = "vol"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", <<-EOT
          test -f "$NOMAD_ALLOC_DIR/data/init" || exit 3
          i=0
          while [ ! -f "$NOMAD_ALLOC_DIR/data/side" ]; do
            i=$((i+1)); [ $i -gt 100 ] && exit 4; sleep 0.1
          done
          echo "hello from $NOMAD_ALLOC_ID" > vol/hello
        EOT
        ]
      }
    }
  }
}
`

// lifecycleAlloc is the part of /v1/allocation/<id> this test reads.
type lifecycleAlloc struct {
	ID, ClientStatus string
	TaskStates       map[string]struct {
		State                 string
		Failed                bool
		StartedAt, FinishedAt time.Time
		Events                []struct{ Type, Message string }
	}
}

// TestE2E_LifecycleAndHostVolume runs lifecycleJob on an agent offering
// a temp dir as host volume "data": the allocation completes, the task
// order shows in StartedAt/FinishedAt and the events, the file the main
// task wrote is in the host dir, and the node reports the volume.
func TestE2E_LifecycleAndHostVolume(t *testing.T) {
	dir := reachableDir(t)
	hostDir := filepath.Join(dir, "hostvol")
	if err := os.Mkdir(hostDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(hostDir, 0o777); err != nil { // tasks run as nobody
		t.Fatal(err)
	}
	ports := freePorts(t, 3)
	volCfg := writeFile(t, dir, "volume.hcl", fmt.Sprintf("client {\n  host_volume \"data\" {\n    path = %q\n  }\n}\n", hostDir))
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-l", ports, 1), "-config", volCfg)

	var nodes []struct{ ID string }
	if code := a.getJSON("/v1/nodes", &nodes); code != 200 || len(nodes) != 1 {
		t.Fatalf("nodes: status %d, %d nodes", code, len(nodes))
	}
	var node struct {
		HostVolumes map[string]struct {
			Path     string
			ReadOnly bool
		}
	}
	if code := a.getJSON("/v1/node/"+nodes[0].ID, &node); code != 200 || node.HostVolumes["data"].Path != hostDir {
		t.Errorf("node host volumes: status %d, %+v; want data at %s", code, node.HostVolumes, hostDir)
	}

	if r := a.drover("job", "run", "-detach", writeFile(t, dir, "lifecycle.hcl", lifecycleJob)); r.code != 0 {
		t.Fatalf("job run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	stub := a.waitAlloc("lifecycle", "complete", "failed")
	var al lifecycleAlloc
	if code := a.getJSON("/v1/allocation/"+stub.ID, &al); code != 200 {
		t.Fatalf("GET allocation: status %d", code)
	}
	if al.ClientStatus != "complete" {
		t.Fatalf("allocation %s, want complete: %+v", al.ClientStatus, al.TaskStates)
	}
	initT, side, main := al.TaskStates["init"], al.TaskStates["side"], al.TaskStates["main"]
	if main.StartedAt.Before(initT.FinishedAt) {
		t.Errorf("main started %v, before the prestart task finished %v", main.StartedAt, initT.FinishedAt)
	}
	if side.StartedAt.Before(main.StartedAt) {
		t.Errorf("poststart sidecar started %v, before main %v", side.StartedAt, main.StartedAt)
	}
	var sideEvents []string
	for _, ev := range side.Events {
		sideEvents = append(sideEvents, ev.Type)
	}
	if side.Failed || !slices.Contains(sideEvents, "Main Tasks Dead") {
		t.Errorf("sidecar: failed %v, events %v; want it stopped when main ended", side.Failed, sideEvents)
	}
	b, err := os.ReadFile(filepath.Join(hostDir, "hello"))
	if err != nil || !strings.Contains(string(b), "hello from "+al.ID) {
		t.Errorf("host volume file: %q, %v; want the main task's line", b, err)
	}
}
