package docker

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/moby/moby/client/pkg/versions"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

func TestFingerprint(t *testing.T) {
	testImage(t)
	tests := []struct {
		name     string
		endpoint string
		healthy  bool
		desc     string
	}{
		{"engine", "", true, "Docker Engine "},
		{"no engine", "unix:///nonexistent/docker.sock", false, "unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			begin := time.Now()
			info := New(nil, Config{Endpoint: tt.endpoint}).Fingerprint(context.Background())
			if info.Healthy != tt.healthy || info.Detected != tt.healthy || !strings.Contains(info.HealthDescription, tt.desc) {
				t.Errorf("Fingerprint() = %+v, want healthy=detected=%v and a description with %q", info, tt.healthy, tt.desc)
			}
			if took := time.Since(begin); took > fingerprintTimeout+time.Second {
				t.Errorf("Fingerprint took %v, want it bounded by %v", took, fingerprintTimeout)
			}
		})
	}
}

func TestRunWritesOutputFiles(t *testing.T) {
	t.Parallel()
	d := New(nil, Config{})
	cfg := helloTask(t, testImage(t), "echo:out-line", "err:err-line", "args")
	if err := os.WriteFile(cfg.StdoutPath, []byte("earlier\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start(t, d, cfg)
	if res := waitExit(t, d, cfg.ID); !res.Successful() {
		t.Fatalf("result = %v, want success", res)
	}
	wantOut := "earlier\nout-line\n" + `args=["echo:out-line" "err:err-line" "args"]` + "\n"
	if got := readFile(t, cfg.StdoutPath); got != wantOut {
		t.Errorf("stdout = %q, want %q", got, wantOut)
	}
	if got, want := readFile(t, cfg.StderrPath), "err-line\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	image := testImage(t)
	tests := []struct {
		name string
		code int
		ok   bool
	}{
		{"zero", 0, true},
		{"one", 1, false},
		{"fortytwo", 42, false},
		{"looks-like-sigterm", 143, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := New(nil, Config{})
			cfg := helloTask(t, image, "exit:"+strconv.Itoa(tt.code))
			start(t, d, cfg)
			res := waitExit(t, d, cfg.ID)
			if res.ExitCode != tt.code || res.Signal != 0 || res.Successful() != tt.ok || res.OOMKilled {
				t.Errorf("result = %+v, want exit code %d, no signal, successful %v", res, tt.code, tt.ok)
			}
			if again := waitExit(t, d, cfg.ID); again.ExitCode != tt.code {
				t.Errorf("second Wait = %v, want exit code %d again", again, tt.code)
			}
		})
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	image := testImage(t)
	tests := []struct {
		name     string
		steps    []string
		signal   string
		timeout  time.Duration
		minTook  time.Duration
		wantCode int
		wantSig  syscall.Signal
		wantOut  string
	}{
		{"graceful", []string{"ready", "wait"}, "SIGTERM", 10 * time.Second, 0, 143, syscall.SIGTERM, ""},
		{"custom signal", []string{"trap:INT:7", "ready", "wait"}, "SIGINT", 10 * time.Second, 0, 7, 0, "got-INT"},
		{"escalates to kill", []string{"ignore:TERM", "ready", "wait"}, "", 300 * time.Millisecond, 300 * time.Millisecond, 137, syscall.SIGKILL, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := New(nil, Config{})
			cfg := helloTask(t, image, tt.steps...)
			start(t, d, cfg)
			waitForFile(t, cfg.StdoutPath, "ready")
			begin := time.Now()
			if err := d.Stop(cfg.ID, tt.timeout, tt.signal); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			took := time.Since(begin)
			if took < tt.minTook || took > tt.minTook+5*time.Second {
				t.Errorf("Stop took %v, want between %v and %v", took, tt.minTook, tt.minTook+5*time.Second)
			}
			res := waitExit(t, d, cfg.ID)
			if res.ExitCode != tt.wantCode || res.Signal != int(tt.wantSig) {
				t.Errorf("result = %+v, want exit code %d, signal %d", res, tt.wantCode, tt.wantSig)
			}
			waitForFile(t, cfg.StdoutPath, tt.wantOut)
			if err := d.Stop(cfg.ID, time.Second, "SIGTERM"); err != nil {
				t.Errorf("Stop of an exited task: %v, want nil", err)
			}
		})
	}
}

func TestDestroyRemovesContainer(t *testing.T) {
	t.Parallel()
	d := New(nil, Config{})
	cfg := helloTask(t, testImage(t), "ready", "wait")
	h := start(t, d, cfg)
	waitForFile(t, cfg.StdoutPath, "ready")
	id := h.State[StateContainerID]
	if _, found := inspect(t, d, id); !found {
		t.Fatalf("container %s not found while the task runs", id)
	}
	if err := d.Destroy(cfg.ID); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if _, found := inspect(t, d, id); found {
		t.Errorf("container %s still exists after Destroy", id)
	}
	if _, err := d.Wait(context.Background(), cfg.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("Wait after Destroy: %v, want ErrTaskNotFound", err)
	}
	if err := d.Destroy(cfg.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("second Destroy: %v, want ErrTaskNotFound", err)
	}
}

func TestEnvLabelsAndResources(t *testing.T) {
	t.Parallel()
	d := New(nil, Config{})
	cfg := helloTask(t, testImage(t), "env:FOO", "env:SPACED")
	cfg.Env = map[string]string{"FOO": "bar", "SPACED": "a b=c"}
	cfg.Config["labels"] = []any{map[string]any{"team": "ml"}}
	cfg.Resources = &structs.AllocatedTaskResources{
		Cpu:    structs.AllocatedCpuResources{CpuShares: 500},
		Memory: structs.AllocatedMemoryResources{MemoryMB: 64},
	}
	h := start(t, d, cfg)
	if res := waitExit(t, d, cfg.ID); !res.Successful() {
		t.Fatalf("result = %v, want success", res)
	}
	if got, want := readFile(t, cfg.StdoutPath), "FOO=bar\nSPACED=a b=c\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	info, found := inspect(t, d, h.State[StateContainerID])
	if !found {
		t.Fatal("container gone before Destroy")
	}
	c := info.Container
	wantLabels := map[string]string{
		"team": "ml", LabelTaskID: cfg.ID, LabelAllocID: cfg.AllocID, LabelTaskName: "task", LabelJobName: "job",
	}
	for k, v := range wantLabels {
		if got := c.Config.Labels[k]; got != v {
			t.Errorf("label %s = %q, want %q", k, got, v)
		}
	}
	if got, want := c.HostConfig.Memory, int64(64<<20); got != want {
		t.Errorf("HostConfig.Memory = %d, want %d", got, want)
	}
	if got, want := c.HostConfig.CPUShares, int64(500); got != want {
		t.Errorf("HostConfig.CPUShares = %d, want %d", got, want)
	}
}

// TestGPUDeviceRequests: this host has no NVIDIA runtime, so a container
// asking for GPUs can be created but not started; the engine's stored
// HostConfig must name exactly the assigned UUIDs.
func TestGPUDeviceRequests(t *testing.T) {
	t.Parallel()
	image := testImage(t)
	uuids := []string{"GPU-11111111-2222-3333-4444-555555555555", "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"}
	tests := []struct {
		name string
		cfg  Config
		want []container.DeviceRequest
	}{
		{"nvidia runtime", Config{}, []container.DeviceRequest{{Driver: "nvidia", DeviceIDs: uuids, Capabilities: [][]string{{"gpu"}}}}},
		{"cdi", Config{UseCDI: true}, []container.DeviceRequest{{Driver: "cdi", DeviceIDs: []string{CDIKind + "=" + uuids[0], CDIKind + "=" + uuids[1]}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(nil, tt.cfg)
			cfg := helloTask(t, image, "echo:gpu")
			cfg.DeviceIDs = uuids
			id, err := d.CreateContainer(context.Background(), cfg)
			if err != nil {
				t.Fatalf("CreateContainer: %v", err)
			}
			t.Cleanup(func() { _ = d.removeContainer(id) })
			info, found := inspect(t, d, id)
			if !found {
				t.Fatal("created container not found")
			}
			got := info.Container.HostConfig.DeviceRequests
			if !slices.EqualFunc(got, tt.want, deviceRequestEqual) {
				t.Errorf("DeviceRequests = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func deviceRequestEqual(a, b container.DeviceRequest) bool {
	return a.Driver == b.Driver && a.Count == b.Count && slices.Equal(a.DeviceIDs, b.DeviceIDs) &&
		slices.EqualFunc(a.Capabilities, b.Capabilities, slices.Equal)
}

// TestStartFailureRemovesContainer: a container the engine cannot start
// (GPUs without the NVIDIA runtime) is removed, and the task is unknown.
func TestStartFailureRemovesContainer(t *testing.T) {
	t.Parallel()
	d := New(nil, Config{})
	cfg := helloTask(t, testImage(t), "echo:gpu")
	cfg.DeviceIDs = []string{"GPU-11111111-2222-3333-4444-555555555555"}
	if _, err := d.Start(context.Background(), cfg); err == nil {
		_ = d.Destroy(cfg.ID)
		t.Skip("this host can start GPU containers; nothing to check")
	}
	api, _ := d.Client()
	left, err := api.ContainerList(context.Background(), client.ContainerListOptions{
		All: true, Filters: client.Filters{}.Add("label", LabelTaskID+"="+cfg.ID),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 0 {
		t.Errorf("%d containers of task %s left behind after a failed start", len(left.Items), cfg.ID)
	}
	if _, err := d.Wait(context.Background(), cfg.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("Wait after a failed Start: %v, want ErrTaskNotFound", err)
	}
}

func TestRecoverTask(t *testing.T) {
	t.Parallel()
	image := testImage(t)
	tests := []struct {
		name string
		// exitFirst lets the container finish while no driver watches it.
		exitFirst bool
	}{
		{"still running", false},
		{"exited while down", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			old := New(nil, Config{})
			cfg := helloTask(t, image, "lines:3", "ready", "sleep:1500ms", "echo:after", "err:bye", "exit:5")
			if err := os.WriteFile(cfg.StdoutPath, []byte("earlier\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			h := start(t, old, cfg)
			waitForFile(t, cfg.StdoutPath, "ready")
			old.abandon(cfg.ID) // the agent dies; the container runs on
			if tt.exitFirst {
				waitStopped(t, old, h.State[StateContainerID])
			}

			d := New(nil, Config{})
			t.Cleanup(func() { _ = d.Destroy(cfg.ID) })
			if err := d.RecoverTask(h); err != nil {
				t.Fatalf("RecoverTask: %v", err)
			}
			if err := d.RecoverTask(h); !errors.Is(err, drivers.ErrTaskExists) {
				t.Errorf("second RecoverTask: %v, want ErrTaskExists", err)
			}
			if res := waitExit(t, d, cfg.ID); res.ExitCode != 5 {
				t.Errorf("result after recovery = %v, want exit code 5", res)
			}
			if got, want := readFile(t, cfg.StdoutPath), "earlier\nline-1\nline-2\nline-3\nready\nafter\n"; got != want {
				t.Errorf("stdout = %q, want %q (no output lost or repeated)", got, want)
			}
			if got, want := readFile(t, cfg.StderrPath), "bye\n"; got != want {
				t.Errorf("stderr = %q, want %q", got, want)
			}
			if err := d.Destroy(cfg.ID); err != nil {
				t.Fatalf("Destroy: %v", err)
			}
			if _, found := inspect(t, d, h.State[StateContainerID]); found {
				t.Error("container still exists after Destroy of the recovered task")
			}
			if err := New(nil, Config{}).RecoverTask(h); !errors.Is(err, drivers.ErrTaskNotFound) {
				t.Errorf("RecoverTask of a removed container: %v, want ErrTaskNotFound", err)
			}
		})
	}
}

// waitStopped polls until the container no longer runs.
func waitStopped(t *testing.T, d *Driver, id string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		info, found := inspect(t, d, id)
		if !found || !info.Container.State.Running {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("container %s still running after %v", id, waitLimit)
}

func TestWaitContextCancel(t *testing.T) {
	t.Parallel()
	d := New(nil, Config{})
	cfg := helloTask(t, testImage(t), "wait")
	start(t, d, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := d.Wait(ctx, cfg.ID)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	cancel()
	select {
	case res, ok := <-ch:
		if ok {
			t.Errorf("Wait delivered %v after cancel, want a closed channel", res)
		}
	case <-time.After(waitLimit):
		t.Fatal("Wait channel not closed after ctx cancel")
	}
}

func TestDuplicateAndUnknownTask(t *testing.T) {
	t.Parallel()
	d := New(nil, Config{})
	cfg := helloTask(t, testImage(t), "wait")
	start(t, d, cfg)
	if _, err := d.Start(context.Background(), cfg); !errors.Is(err, drivers.ErrTaskExists) {
		t.Errorf("second Start with the same ID: %v, want ErrTaskExists", err)
	}
	if _, err := d.Wait(context.Background(), "nope"); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("Wait: %v, want ErrTaskNotFound", err)
	}
	if err := d.Stop("nope", time.Second, ""); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("Stop: %v, want ErrTaskNotFound", err)
	}
	if err := d.Destroy("nope"); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("Destroy: %v, want ErrTaskNotFound", err)
	}
}

func TestMissingImageFailsClearly(t *testing.T) {
	t.Parallel()
	d := New(nil, Config{})
	testImage(t)
	cfg := helloTask(t, "drover-test/absent:nope")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_, err := d.Start(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "not present locally") {
		t.Errorf("Start with an absent image: %v, want an error saying it is not present locally", err)
	}
	if _, err := d.Wait(context.Background(), cfg.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("Wait after a failed Start: %v, want ErrTaskNotFound", err)
	}
}

func TestNegotiatedAPIVersion(t *testing.T) {
	testImage(t)
	d := New(nil, Config{})
	d.Fingerprint(context.Background())
	v, err := d.api.ServerVersion(context.Background(), client.ServerVersionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := v.APIVersion
	if versions.LessThan(client.MaxAPIVersion, want) {
		want = client.MaxAPIVersion
	}
	if got := d.api.ClientVersion(); got != want {
		t.Errorf("negotiated API version = %s, want the engine's %s", got, want)
	}
}
