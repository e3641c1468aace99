package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestE2E_DockerCheckpointMount: a docker task of a group with a
// checkpoint block gets its checkpoint dir bind-mounted at the block's
// path, and DROVER_CHECKPOINT_DIR names that path in the container.
func TestE2E_DockerCheckpointMount(t *testing.T) {
	api := dockerEngine(t)
	image := dockerHelloImage(t, api)
	removeTestContainers(t, api)
	dir := reachableDir(t)
	root := filepath.Join(dir, "ckpt")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 3)
	extra := writeFile(t, dir, "ckpt.hcl", fmt.Sprintf("client {\n  checkpoint_root = %q\n}\n", root))
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-dc", ports, 1), "-config", extra)

	job := fmt.Sprintf(`job "docker-ckpt" {
  datacenters = ["dc1"]
  group "g" {
    count = 2
    checkpoint {
      path = "/ckpt"
    }
    task "main" {
      driver = "docker"
      config {
        image  = %q
        args   = ["with-checkpoint"]
        labels = { %s = %q }
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`, image, testLabel, t.Name())
	if r := a.drover("job", "run", "-detach", writeFile(t, dir, "docker-ckpt.hcl", job)); r.code != 0 {
		t.Fatalf("job run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	al := a.waitAlloc("docker-ckpt", "running")
	c := allocContainer(t, api, al.ID)
	var source string
	for _, m := range c.Mounts {
		if m.Destination == "/ckpt" {
			source = m.Source
			if !m.RW || m.Type != "bind" {
				t.Errorf("mount at /ckpt: got %+v, want a writable bind", m)
			}
		}
	}
	if want0, want1 := filepath.Join(root, "default", "docker-ckpt", "g", "0"), filepath.Join(root, "default", "docker-ckpt", "g", "1"); source != want0 && source != want1 {
		t.Errorf("container mounts %+v: want %s or %s at /ckpt", c.Mounts, want0, want1)
	}
	if !slices.Contains(c.Config.Env, "DROVER_CHECKPOINT_DIR=/ckpt") {
		t.Errorf("container env %v, want DROVER_CHECKPOINT_DIR=/ckpt", c.Config.Env)
	}
	stopJob(t, a, "docker-ckpt")
	waitContainersGone(t, api, al.ID)
}
