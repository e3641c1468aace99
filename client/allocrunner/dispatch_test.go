package allocrunner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestMetaEnv(t *testing.T) {
	alloc := envAlloc()
	alloc.Job.Meta = map[string]string{"scene": "job", "owner": "ml"}
	alloc.Job.TaskGroups = []*structs.TaskGroup{{Name: "workers", Meta: map[string]string{"scene": "group", "my-key": "dash"}}}
	task := &structs.Task{Name: "main", Meta: map[string]string{"scene": "task"}}
	env := TaskEnv(alloc, task, "/d/alloc/a1", "/d/alloc/a1/main")
	want := map[string]string{
		"NOMAD_META_scene": "task", "NOMAD_META_SCENE": "task", "DROVER_META_scene": "task", "DROVER_META_SCENE": "task",
		"NOMAD_META_owner": "ml", "NOMAD_META_OWNER": "ml",
		"NOMAD_META_my_key": "dash", "NOMAD_META_MY_KEY": "dash",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("env[%s] = %q, want %q", k, env[k], v)
		}
	}
}

func TestWriteDispatchPayload(t *testing.T) {
	dir := t.TempDir()
	job := &structs.Job{Payload: []byte("hello")}
	task := &structs.Task{Name: "t", DispatchPayload: &structs.DispatchPayloadConfig{File: "in/data.txt"}}
	if err := writeDispatchPayload(job, task, dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "local", "in", "data.txt"))
	if err != nil || string(got) != "hello" {
		t.Fatalf("payload file = %q, %v; want hello", got, err)
	}
	// A link planted in the task dir does not lead the write outside it.
	outside := t.TempDir()
	dir2 := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir2, "local")); err != nil {
		t.Fatal(err)
	}
	if err := writeDispatchPayload(job, task, dir2); err == nil {
		t.Errorf("write through a link out of the task dir succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "in", "data.txt")); err == nil {
		t.Errorf("payload written outside the task dir")
	}
	task.DispatchPayload.File = "../../etc/x"
	if err := writeDispatchPayload(job, task, dir); err == nil {
		t.Errorf("escaping file name accepted")
	}
}
