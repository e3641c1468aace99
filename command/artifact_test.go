package command

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestArtifact_EndToEnd: a task's artifact is downloaded (checksum
// verified) into local/ before it starts; a refused source fails the
// task with a message naming what Drover supports.
func TestArtifact_EndToEnd(t *testing.T) {
	body := []byte("hello from the artifact\n")
	sum := sha256.Sum256(body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) }))
	defer srv.Close()
	addr := startDevAgent(t)
	job := func(id, source, checksum string) string {
		return fmt.Sprintf(`job %q {
  datacenters = ["dc1"]
  type        = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/cat"
        args    = ["local/hello.txt"]
      }
      artifact {
        source = %q
        options {
          checksum = %q
        }
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}`, id, source, checksum)
	}
	good := job("art", srv.URL+"/hello.txt", "sha256:"+hex.EncodeToString(sum[:]))
	if code, out, errOut := run(t, addr, "job", "run", "-detach", nsWriteFile(t, "art.hcl", good)); code != 0 {
		t.Fatalf("job run: %d %s %s", code, out, errOut)
	}
	allocOf := func(job string) string {
		var id string
		nsWaitUntil(t, 20*time.Second, "an allocation of "+job, func() bool {
			var allocs []struct{ ID string }
			getJSON(t, addr+"/v1/job/"+job+"/allocations", &allocs)
			if len(allocs) > 0 {
				id = allocs[0].ID
			}
			return id != ""
		})
		return id
	}
	id := allocOf("art")
	nsWaitUntil(t, 30*time.Second, "the artifact's content in the task's output", func() bool {
		resp, err := http.Get(addr + "/v1/client/fs/logs/" + id + "?task=t&type=stdout&plain=true")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "hello from the artifact")
	})

	bad := job("art-s3", "s3::https://bucket.s3.amazonaws.com/hello.txt", "sha256:"+hex.EncodeToString(sum[:]))
	if code, out, errOut := run(t, addr, "job", "run", "-detach", nsWriteFile(t, "bad.hcl", bad)); code != 0 {
		t.Fatalf("job run: %d %s %s", code, out, errOut)
	}
	badID := allocOf("art-s3")
	nsWaitUntil(t, 30*time.Second, "the task failed with Failed Artifact Download", func() bool {
		var alloc struct {
			ClientStatus string
			TaskStates   map[string]struct {
				Events []struct{ Type, Message string }
			}
		}
		getJSON(t, addr+"/v1/allocation/"+badID, &alloc)
		for _, ev := range alloc.TaskStates["t"].Events {
			if ev.Type == "Failed Artifact Download" && strings.Contains(ev.Message, "s3 getter is not supported by Drover") {
				return alloc.ClientStatus == "failed"
			}
		}
		return false
	})
}
