package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestE2E_DockerHostVolume: a docker task's volume_mount of a host
// volume is a bind mount of the volume's path at the destination,
// read-only as asked, on an agent whose docker plugin does not allow
// volumes (the operator offered the host volume).
func TestE2E_DockerHostVolume(t *testing.T) {
	api := dockerEngine(t)
	image := dockerHelloImage(t, api)
	removeTestContainers(t, api)
	dir := reachableDir(t)
	hostDir := filepath.Join(dir, "models")
	if err := os.Mkdir(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 3)
	volCfg := writeFile(t, dir, "volume.hcl", fmt.Sprintf("client {\n  host_volume \"models\" {\n    path = %q\n    read_only = true\n  }\n}\n", hostDir))
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-v", ports, 1), "-config", volCfg)

	job := fmt.Sprintf(`job "docker-vol" {
  datacenters = ["dc1"]
  group "g" {
    volume "models" {
      type      = "host"
      source    = "models"
      read_only = true
    }
    task "main" {
      driver = "docker"
      volume_mount {
        volume      = "models"
        destination = "/models"
      }
      config {
        image  = %q
        args   = ["with-volume"]
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
	if r := a.drover("job", "run", "-detach", writeFile(t, dir, "docker-vol.hcl", job)); r.code != 0 {
		t.Fatalf("job run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	al := a.waitAlloc("docker-vol", "running")
	c := allocContainer(t, api, al.ID)
	found := false
	for _, m := range c.Mounts {
		if m.Destination == "/models" {
			found = true
			if m.Source != hostDir || m.RW || m.Type != "bind" {
				t.Errorf("mount at /models: got %+v, want a read-only bind of %s", m, hostDir)
			}
		}
	}
	if !found {
		t.Errorf("container mounts %+v: none at /models", c.Mounts)
	}
	stopJob(t, a, "docker-vol")
	waitContainersGone(t, api, al.ID)
}
