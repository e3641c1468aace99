package client

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	"github.com/droverhq/drover/client/devices/simulated"
	"github.com/droverhq/drover/client/state"
	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/docker"
	execdriver "github.com/droverhq/drover/drivers/exec"
	"github.com/droverhq/drover/structs"
)

// TestDamagedStateKillsExecAndDockerOrphans: the exec and docker tasks
// a client left running (LeaveTasksRunning, as a crash would) are
// killed by the next client when the state file is damaged (scribbled
// over, truncated, emptied): the exec task's cgroup is emptied and
// removed, the container removed, and the servers' allocation runs
// again, once per task.
func TestDamagedStateKillsExecAndDockerOrphans(t *testing.T) {
	if info := execdriver.New(nil, execdriver.Config{}).Fingerprint(context.Background()); !info.Healthy {
		t.Skipf("exec isolation unavailable: %s", info.HealthDescription)
	}
	dd := docker.New(nil, docker.Config{})
	if info := dd.Fingerprint(context.Background()); !info.Healthy {
		t.Skipf("docker engine unreachable: %s", info.HealthDescription)
	}
	image := helloImage(t, dd)
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"scribbled", scribbleMiddle},
		{"truncated", func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"empty", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, time.Second)
			cfg := testConfig(t, srv.addr())
			cfg.Drivers = driversFor()
			cfg.LeaveTasksRunning = true
			c1, err := NewClient(cfg)
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r >= 1 })
			a := twoDriverAlloc(c1.NodeID(), image)
			srv.putAlloc(a)
			execLog, _ := c1.LogPath(a.ID, "e", false)
			dockerLog, _ := c1.LogPath(a.ID, "d", false)
			starts := func(path, word string) int { b, _ := os.ReadFile(path); return strings.Count(string(b), word) }
			waitFor(t, "both tasks up", func() bool { return starts(execLog, "up gpu-0") == 1 && starts(dockerLog, "ready") == 1 })
			if err := c1.Shutdown(); err != nil {
				t.Fatal(err)
			}
			old := storedHandles(t, cfg.DataDir, a.ID)
			cgroup, container := old["e"].State["cgroup_dirs"], old["d"].State[docker.StateContainerID]
			if cgroup == "" || container == "" {
				t.Fatalf("stored handles %v lack the cgroup or the container", old)
			}
			t.Cleanup(func() { removeContainer(dd, container) })
			if !cgroupHasProcs(cgroup) || !containerRunning(t, dd, container) {
				t.Fatal("tasks died with LeaveTasksRunning")
			}

			tt.damage(t, state.Path(cfg.DataDir))
			cfg2 := *cfg
			cfg2.Drivers = driversFor() // a new agent: new drivers
			cfg2.LeaveTasksRunning = false
			c2 := startClient(t, &cfg2)
			waitFor(t, "orphaned exec task killed, its cgroup removed", func() bool { return cgroupGone(cgroup) })
			waitFor(t, "orphaned container removed", func() bool { return !containerExists(t, dd, container) })
			waitFor(t, "allocation run again", func() bool { return starts(execLog, "up gpu-0") == 2 && starts(dockerLog, "ready") == 2 })
			if ids := taskContainers(t, dd, old["d"].ID); len(ids) != 1 || ids[0] == container {
				t.Errorf("containers of the docker task %v, want one new one (the old was %s)", ids, container)
			}
			if err := c2.Shutdown(); err != nil {
				t.Fatal(err)
			}
			if left, _ := filepath.Glob(filepath.Join(cfg.DataDir, "alloc", "*", ".drover-exec-task-*")); len(left) != 0 {
				t.Errorf("exec pid files left after every task ended: %v", left)
			}
		})
	}
}

// driversFor is a client's exec and docker drivers.
func driversFor() map[string]drivers.Driver {
	return map[string]drivers.Driver{
		execdriver.Name: execdriver.New(nil, execdriver.Config{}),
		docker.Name:     docker.New(nil, docker.Config{}),
	}
}

// twoDriverAlloc is a service allocation of an exec task "e" and a
// docker task "d", both running until stopped; the exec task holds a
// GPU.
func twoDriverAlloc(nodeID, image string) *structs.Allocation {
	job := &structs.Job{
		ID: "job-" + structs.ShortID(structs.GenerateUUID()), Type: structs.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "g", Count: 1,
			RestartPolicy: &structs.RestartPolicy{Attempts: 0, Mode: structs.RestartModeFail},
			Tasks: []*structs.Task{
				{Name: "e", Driver: execdriver.Name, Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "echo up $NVIDIA_VISIBLE_DEVICES; exec sleep 600"}}},
				{Name: "d", Driver: docker.Name, Config: map[string]any{"image": image, "args": []any{"ready", "sleep:600s"}}},
			},
		}},
	}
	job.Canonicalize()
	res := func() *structs.AllocatedTaskResources {
		return &structs.AllocatedTaskResources{Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}}
	}
	// The exec task holds a (simulated) GPU: the one the servers would
	// think free while an orphan kept it.
	withGPU := res()
	withGPU.Devices = []*structs.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: simulated.DefaultModel, DeviceIDs: []string{"gpu-0"}}}
	return &structs.Allocation{
		ID: structs.GenerateUUID(), Namespace: job.Namespace, Name: structs.AllocName(job.ID, "g", 0),
		NodeID: nodeID, JobID: job.ID, Job: job, TaskGroup: "g",
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{"e": withGPU, "d": res()}},
		DesiredStatus:      structs.AllocDesiredStatusRun,
		ClientStatus:       structs.AllocClientStatusPending,
	}
}

// storedHandles reads the task handles a stopped client stored for
// allocID.
func storedHandles(t *testing.T, dataDir, allocID string) map[string]*drivers.TaskHandle {
	t.Helper()
	db, err := state.Open(state.Path(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stored, _, err := db.GetAllocs()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stored {
		if s.Alloc.ID == allocID {
			return s.TaskHandles
		}
	}
	return nil
}

// taskContainers lists the IDs of the containers of a task ID.
func taskContainers(t *testing.T, d *docker.Driver, taskID string) []string {
	api, _ := d.Client()
	list, err := api.ContainerList(context.Background(), client.ContainerListOptions{
		All: true, Filters: client.Filters{}.Add("label", docker.LabelTaskID+"="+taskID),
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

func cgroupHasProcs(dirs string) bool {
	d := strings.Split(dirs, ":")
	b, err := os.ReadFile(filepath.Join(d[len(d)-1], "cgroup.procs"))
	return err == nil && strings.TrimSpace(string(b)) != ""
}

func cgroupGone(dirs string) bool {
	for _, d := range strings.Split(dirs, ":") {
		if _, err := os.Stat(d); err == nil {
			return false
		}
	}
	return true
}

func containerExists(t *testing.T, d *docker.Driver, id string) bool {
	api, _ := d.Client()
	_, err := api.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil && !cerrdefs.IsNotFound(err) {
		t.Fatalf("inspect %s: %v", id, err)
	}
	return err == nil
}

func containerRunning(t *testing.T, d *docker.Driver, id string) bool {
	api, _ := d.Client()
	res, err := api.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("inspect %s: %v", id, err)
	}
	return res.Container.State != nil && res.Container.State.Running
}

func removeContainer(d *docker.Driver, id string) {
	api, _ := d.Client()
	_, _ = api.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
}

// helloImage builds (once per binary hash) the docker driver's test
// workload, drivers/docker/testdata/hello, static in a FROM scratch
// image, and returns its tag.
func helloImage(t *testing.T, d *docker.Driver) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "../drivers/docker/testdata/hello")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build hello: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	ref := "drover-test/hello:" + hex.EncodeToString(sum[:])[:12]
	api, _ := d.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := api.ImageInspect(ctx, ref); err == nil {
		return ref
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range map[string][]byte{
		"Dockerfile": []byte("FROM scratch\nCOPY hello /hello\nENTRYPOINT [\"/hello\"]\n"), "hello": data,
	} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := api.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{ref}, Remove: true, ForceRemove: true})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return ref
		} else if err != nil {
			t.Fatal(err)
		}
		if m.Error != nil {
			t.Fatal(fmt.Errorf("image build %s: %s", ref, m.Error.Message))
		}
	}
}
