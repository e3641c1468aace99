package docker

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

func specTask(config map[string]any) *drivers.TaskConfig {
	return &drivers.TaskConfig{
		ID: "a1/web/0", AllocID: "a1", JobName: "job", TaskName: "web",
		Env:    map[string]string{"B": "2", "A": "1"},
		Config: config,
	}
}

func TestCreateOptions(t *testing.T) {
	uuids := []string{"GPU-1", "GPU-2"}
	tests := []struct {
		name   string
		config map[string]any
		edit   func(*drivers.TaskConfig)
		opts   Config
		check  func(t *testing.T, c *container.Config, h *container.HostConfig)
	}{
		{"command and args", map[string]any{"image": "img", "command": "/hello", "args": []any{"a", "b"}, "entrypoint": []any{"/init"}}, nil, Config{},
			func(t *testing.T, c *container.Config, _ *container.HostConfig) {
				if got, want := c.Cmd, []string{"/hello", "a", "b"}; !reflect.DeepEqual(got, want) {
					t.Errorf("Cmd = %q, want %q", got, want)
				}
				if got, want := c.Entrypoint, []string{"/init"}; !reflect.DeepEqual(got, want) {
					t.Errorf("Entrypoint = %q, want %q", got, want)
				}
				if got, want := c.Env, []string{"A=1", "B=2"}; !reflect.DeepEqual(got, want) {
					t.Errorf("Env = %q, want %q", got, want)
				}
			}},
		{"user", map[string]any{"image": "img"}, func(c *drivers.TaskConfig) { c.User = "1000:1000" }, Config{},
			func(t *testing.T, c *container.Config, _ *container.HostConfig) {
				if c.User != "1000:1000" {
					t.Errorf("User = %q, want the task's user", c.User)
				}
			}},
		{"args only", map[string]any{"image": "img", "args": []string{"x"}}, nil, Config{},
			func(t *testing.T, c *container.Config, _ *container.HostConfig) {
				if got, want := c.Cmd, []string{"x"}; !reflect.DeepEqual(got, want) {
					t.Errorf("Cmd = %q, want %q", got, want)
				}
			}},
		{"resources", map[string]any{"image": "img"}, func(c *drivers.TaskConfig) {
			c.Resources = &structs.AllocatedTaskResources{
				Cpu: structs.AllocatedCpuResources{CpuShares: 250}, Memory: structs.AllocatedMemoryResources{MemoryMB: 300},
			}
		}, Config{},
			func(t *testing.T, _ *container.Config, h *container.HostConfig) {
				if h.Memory != 300<<20 || h.CPUShares != 250 {
					t.Errorf("Memory, CPUShares = %d, %d, want %d, 250", h.Memory, h.CPUShares, 300<<20)
				}
			}},
		{"gpus nvidia", map[string]any{"image": "img"}, func(c *drivers.TaskConfig) { c.DeviceIDs = uuids }, Config{},
			func(t *testing.T, _ *container.Config, h *container.HostConfig) {
				want := []container.DeviceRequest{{Driver: "nvidia", DeviceIDs: uuids, Capabilities: [][]string{{"gpu"}}}}
				if !reflect.DeepEqual(h.DeviceRequests, want) {
					t.Errorf("DeviceRequests = %+v, want %+v", h.DeviceRequests, want)
				}
			}},
		{"gpus cdi", map[string]any{"image": "img"}, func(c *drivers.TaskConfig) { c.DeviceIDs = uuids }, Config{UseCDI: true},
			func(t *testing.T, _ *container.Config, h *container.HostConfig) {
				want := []container.DeviceRequest{{Driver: "cdi", DeviceIDs: []string{"nvidia.com/gpu=GPU-1", "nvidia.com/gpu=GPU-2"}}}
				if !reflect.DeepEqual(h.DeviceRequests, want) {
					t.Errorf("DeviceRequests = %+v, want %+v", h.DeviceRequests, want)
				}
			}},
		{"no gpus", map[string]any{"image": "img"}, nil, Config{},
			func(t *testing.T, _ *container.Config, h *container.HostConfig) {
				if h.DeviceRequests != nil {
					t.Errorf("DeviceRequests = %+v, want none", h.DeviceRequests)
				}
			}},
		{"ports volumes mounts network", map[string]any{
			"image": "img", "ports": []any{"8080:80", "5353:53/udp"}, "volumes": []any{"/data:/data:ro"},
			"mounts":       []any{map[string]any{"source": "/x", "target": "/y", "readonly": true}},
			"network_mode": "host", "privileged": true,
		}, nil, Config{AllowVolumes: true, AllowPrivileged: true, AllowHostNetwork: true},
			func(t *testing.T, c *container.Config, h *container.HostConfig) {
				p80, p53 := network.MustParsePort("80/tcp"), network.MustParsePort("53/udp")
				if len(c.ExposedPorts) != 2 || h.PortBindings[p80][0].HostPort != "8080" || h.PortBindings[p53][0].HostPort != "5353" {
					t.Errorf("ExposedPorts %v, PortBindings %v, want 80/tcp->8080 and 53/udp->5353", c.ExposedPorts, h.PortBindings)
				}
				if got, want := h.Binds, []string{"/data:/data:ro"}; !reflect.DeepEqual(got, want) {
					t.Errorf("Binds = %q, want %q", got, want)
				}
				wantMount := []mount.Mount{{Type: mount.TypeBind, Source: "/x", Target: "/y", ReadOnly: true}}
				if !reflect.DeepEqual(h.Mounts, wantMount) {
					t.Errorf("Mounts = %+v, want %+v", h.Mounts, wantMount)
				}
				if h.NetworkMode != "host" || !h.Privileged {
					t.Errorf("NetworkMode = %q, Privileged = %v, want host and true", h.NetworkMode, h.Privileged)
				}
			}},
		{"labels", map[string]any{"image": "img", "labels": []any{map[string]any{"team": "ml", LabelJobName: "spoof"}}}, nil, Config{},
			func(t *testing.T, c *container.Config, _ *container.HostConfig) {
				want := map[string]string{"team": "ml", LabelTaskID: "a1/web/0", LabelAllocID: "a1", LabelTaskName: "web", LabelJobName: "job"}
				if !reflect.DeepEqual(c.Labels, want) {
					t.Errorf("Labels = %v, want %v", c.Labels, want)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := specTask(tt.config)
			if tt.edit != nil {
				tt.edit(cfg)
			}
			got, err := CreateOptions(cfg, tt.opts)
			if err != nil {
				t.Fatalf("CreateOptions: %v", err)
			}
			if got.Config.Image != "img" || !strings.HasPrefix(got.Name, "drover-a1_web_0-") {
				t.Errorf("image %q, name %q, want img and drover-a1_web_0-<suffix>", got.Config.Image, got.Name)
			}
			tt.check(t, got.Config, got.HostConfig)
		})
	}
}

// TestCreateOptionsRefused: what reaches the host is off by default and
// refused with the setting named; each switch allows its own setting.
func TestCreateOptionsRefused(t *testing.T) {
	bind := []any{map[string]any{"type": "bind", "source": "/", "target": "/host"}}
	tests := []struct {
		name   string
		config map[string]any
		opts   Config
		want   string // "" allowed
	}{
		{"volume of /", map[string]any{"image": "i", "volumes": []any{"/:/host"}}, Config{}, `volumes { enabled = true }`},
		{"bind mount", map[string]any{"image": "i", "mounts": bind}, Config{}, `mounts[0] (type "bind", source "/")`},
		{"named volume", map[string]any{"image": "i", "mounts": []any{map[string]any{"type": "volume", "source": "v", "target": "/v"}}}, Config{}, "volume mount"},
		{"tmpfs mount", map[string]any{"image": "i", "mounts": []any{map[string]any{"type": "tmpfs", "target": "/t"}}}, Config{}, ""},
		{"privileged", map[string]any{"image": "i", "privileged": true}, Config{}, "allow_privileged = true"},
		{"unprivileged", map[string]any{"image": "i", "privileged": false}, Config{}, ""},
		{"host network", map[string]any{"image": "i", "network_mode": "host"}, Config{}, "allow_host_network = true"},
		{"bridge network", map[string]any{"image": "i", "network_mode": "bridge"}, Config{}, ""},
		{"another container's network", map[string]any{"image": "i", "network_mode": "container:agent"}, Config{}, "allow_host_network = true"},
		{"image mount", map[string]any{"image": "i", "mounts": []any{map[string]any{"type": "image", "source": "other", "target": "/o"}}}, Config{}, "image mount"},
		{"volumes allowed", map[string]any{"image": "i", "volumes": []any{"/:/host"}, "mounts": bind}, Config{AllowVolumes: true}, ""},
		{"volumes allow no privileges", map[string]any{"image": "i", "volumes": []any{"/:/host"}, "privileged": true}, Config{AllowVolumes: true}, "allow_privileged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CreateOptions(specTask(tt.config), tt.opts)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("CreateOptions = %v, want it allowed", err)
			case tt.want != "" && (!errors.Is(err, drivers.ErrDisabled) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("CreateOptions = %v, want ErrDisabled containing %q", err, tt.want)
			}
		})
	}
}

func TestCreateOptionsInvalid(t *testing.T) {
	tests := []struct {
		name   string
		config map[string]any
	}{
		{"no image", map[string]any{"command": "/x"}},
		{"image not a string", map[string]any{"image": 3}},
		{"args not a list", map[string]any{"image": "i", "args": "a b"}},
		{"arg not a string", map[string]any{"image": "i", "args": []any{1}}},
		{"port label not allocated", map[string]any{"image": "i", "ports": []any{"http"}}},
		{"port not a number", map[string]any{"image": "i", "ports": []any{"80:http"}}},
		{"volume relative target", map[string]any{"image": "i", "volumes": []any{"/a:b"}}},
		{"volume bad mode", map[string]any{"image": "i", "volumes": []any{"/a:/b:rx"}}},
		{"label not a string", map[string]any{"image": "i", "labels": map[string]any{"a": 1}}},
		{"mount without target", map[string]any{"image": "i", "mounts": []any{map[string]any{"source": "/x"}}}},
		{"privileged not a bool", map[string]any{"image": "i", "privileged": "yes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CreateOptions(specTask(tt.config), Config{})
			if !errors.Is(err, drivers.ErrInvalidConfig) {
				t.Errorf("CreateOptions(%v) = %v, want ErrInvalidConfig", tt.config, err)
			}
		})
	}
}
