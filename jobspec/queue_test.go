package jobspec

import (
	"strings"
	"testing"
)

// TestQueueAttribute: queue = "..." names the job's fair-share queue ("":
// the default queue); a malformed name is an error at its position.
func TestQueueAttribute(t *testing.T) {
	const src = `job "j" {
  datacenters = ["dc1"]
  queue       = %q
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}`
	job, err := Parse("q.hcl", []byte(strings.Replace(src, "%q", `"research"`, 1)))
	if err != nil || job.Queue != "research" {
		t.Fatalf("queue = %q (%v), want research", job.Queue, err)
	}
	job, err = Parse("q.hcl", []byte(strings.Replace(src, "%q", `""`, 1)))
	if err != nil || job.Queue != "" {
		t.Fatalf("empty queue = %q (%v), want the default queue", job.Queue, err)
	}
	_, err = Parse("q.hcl", []byte(strings.Replace(src, "%q", `"a b"`, 1)))
	if err == nil || !strings.Contains(err.Error(), "q.hcl:3,17") || !strings.Contains(err.Error(), `queue = "a b"`) {
		t.Fatalf("bad queue name: got %v, want an error at q.hcl:3,17 naming it", err)
	}
}
