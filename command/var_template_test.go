package command

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const templateJobHCL = `job "web" {
  datacenters = ["dc1"]
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo pass=$DB_PASS; sleep 300"]
      }
      template {
        data        = <<EOT
DB_PASS={{ with nomadVar "nomad/jobs/web" }}{{ .db_pass }}{{ end }}
EOT
        destination = "secrets/app.env"
        env         = true
        change_mode = "restart"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}`

// TestTemplateFromVariable_EndToEnd: a variable put with the CLI is
// rendered by a template into the task's environment (env = true); a
// new value re-renders it and restarts the task (change_mode restart),
// which then prints the new value.
func TestTemplateFromVariable_EndToEnd(t *testing.T) {
	addr := startDevAgent(t)
	if code, out, errOut := run(t, addr, "var", "put", "nomad/jobs/web", "db_pass=s3cret"); code != 0 {
		t.Fatalf("var put: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := run(t, addr, "job", "run", "-detach", nsWriteFile(t, "web.hcl", templateJobHCL)); code != 0 {
		t.Fatalf("job run: %d %s %s", code, out, errOut)
	}
	var allocID string
	nsWaitUntil(t, 20*time.Second, "an allocation of web", func() bool {
		var allocs []struct{ ID string }
		getJSON(t, addr+"/v1/job/web/allocations", &allocs)
		if len(allocs) == 1 {
			allocID = allocs[0].ID
		}
		return allocID != ""
	})
	logs := func() string {
		resp, err := http.Get(addr + "/v1/client/fs/logs/" + allocID + "?task=t&type=stdout&plain=true")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	nsWaitUntil(t, 30*time.Second, "pass=s3cret in the task's output", func() bool { return strings.Contains(logs(), "pass=s3cret") })

	if code, out, errOut := run(t, addr, "var", "put", "nomad/jobs/web", "db_pass=n3w"); code != 0 {
		t.Fatalf("var put: %d %s %s", code, out, errOut)
	}
	nsWaitUntil(t, 45*time.Second, "pass=n3w after the re-render", func() bool { return strings.Contains(logs(), "pass=n3w") })
	// The client reports the restart in its next batched update.
	nsWaitUntil(t, 20*time.Second, "a restart after Template Re-rendered in the task's state", func() bool {
		var alloc struct {
			TaskStates map[string]struct {
				Restarts int
				Events   []struct{ Type, Message string }
			}
		}
		getJSON(t, addr+"/v1/allocation/"+allocID, &alloc)
		st := alloc.TaskStates["t"]
		for _, ev := range st.Events {
			if ev.Type == "Template Re-rendered" {
				return st.Restarts >= 1
			}
		}
		return false
	})
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(out)
}
