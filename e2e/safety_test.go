package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostTaskJob is a batch job of one task of driver running script, as
// user ("" names none).
func hostTaskJob(id, driver, user, script string) string {
	userLine := ""
	if user != "" {
		userLine = fmt.Sprintf("      user   = %q\n", user)
	}
	return fmt.Sprintf(`job %q {
  datacenters = ["dc1"]
  type        = "batch"
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "t" {
      driver = %q
%s      config {
        command = "/bin/sh"
        args    = ["-c", %q]
      }
    }
  }
}
`, id, driver, userLine, script)
}

// TestE2E_SafeDefaults: the attacks issue #14 names fail on an agent as
// configured by default. Tasks of exec and raw_exec run as nobody and
// cannot read /etc/shadow; a task asking for root is refused with the
// reason; an agent whose config does not enable raw_exec listens on
// loopback only and places no raw_exec task.
func TestE2E_SafeDefaults(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("tasks run as nobody only under a root agent")
	}
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-safe", ports, 1))

	const probe = `id -u; cat /etc/shadow >/dev/null 2>&1 || echo no-shadow`
	for _, driver := range []string{"raw_exec", "exec"} {
		t.Run(driver+" runs as nobody", func(t *testing.T) {
			id := "whoami-" + strings.ReplaceAll(driver, "_", "-")
			if r := a.drover("job", "run", "-detach", writeFile(t, dir, id+".hcl", hostTaskJob(id, driver, "", probe))); r.code != 0 {
				t.Fatalf("job run: exit %d: %s%s", r.code, r.stdout, r.stderr)
			}
			al := a.waitAlloc(id, "complete", "failed")
			if out := a.drover("alloc", "logs", al.ID, "t"); out.stdout != "65534\nno-shadow\n" {
				t.Errorf("%s task output = %q (status %s, events %v), want uid 65534 and no shadow",
					driver, out.stdout, al.ClientStatus, taskEvents(t, a, al.ID, "t"))
			}
		})
	}

	t.Run("root refused", func(t *testing.T) {
		path := writeFile(t, dir, "as-root.hcl", hostTaskJob("as-root", "raw_exec", "root", "id -u"))
		if r := a.drover("job", "run", "-detach", path); r.code != 0 {
			t.Fatalf("job run: exit %d: %s%s", r.code, r.stdout, r.stderr)
		}
		al := a.waitAlloc("as-root", "failed")
		var msgs []string
		for _, e := range taskEvents(t, a, al.ID, "t") {
			msgs = append(msgs, e.Type+": "+e.Message)
		}
		if got := strings.Join(msgs, "\n"); !strings.Contains(got, `user "root" may not run raw_exec tasks`) || !strings.Contains(got, "user.denylist") {
			t.Errorf("events:\n%s\nwant the task refused for the denylisted user", got)
		}
	})

	t.Run("raw_exec off by default", func(t *testing.T) {
		plain := reachableDir(t)
		p := freePorts(t, 3)
		cfg := writeFile(t, plain, "plain.hcl", fmt.Sprintf(`
name     = "node-plain"
data_dir = %q
ports {
  http = %d
  rpc  = %d
  serf = %d
}
server {
  enabled          = true
  bootstrap_expect = 1
}
client {
  enabled = true
}
`, filepath.Join(plain, "data"), p[0], p[1], p[2]))
		b := startAgent(t, p[0], "-config", cfg)
		var self struct {
			Config struct{ BindAddr string } `json:"config"`
		}
		if code := b.getJSON("/v1/agent/self", &self); code != 200 || self.Config.BindAddr != "127.0.0.1" {
			t.Errorf("agent self: status %d, bind_addr %q; want 127.0.0.1 when the config sets none", code, self.Config.BindAddr)
		}
		r := b.drover("job", "plan", writeFile(t, plain, "raw.hcl", hostTaskJob("raw", "raw_exec", "", "true")))
		if out := r.stdout + r.stderr; !strings.Contains(out, "driver raw_exec not available` filtered 1 node") {
			t.Errorf("job plan of a raw_exec job: exit %d:\n%s\nwant a placement failure naming raw_exec", r.code, out)
		}
	})
}
