package agent

import (
	"reflect"
	"strings"
	"testing"

	"github.com/droverhq/drover/client"
	"github.com/droverhq/drover/drivers/docker"
)

const safetyConfig = `
plugin "raw_exec" {
  config {
    enabled = true
  }
}
plugin "docker" {
  config {
    allow_privileged = true
    volumes {
      enabled = true
    }
  }
}
client {
  enabled = true
  user {
    denylist  = ["root", "admin"]
    allowlist = ["alice"]
  }
  chroot_env = { "/bin" = "/bin", "/opt/tools" = "/tools" }
}
`

// TestSafeDefaults: an agent without a config listens on loopback, has
// raw_exec off and docker without host volumes, privileges or host
// network, and checks exec and raw_exec users against the default
// denylist; -dev turns raw_exec on.
func TestSafeDefaults(t *testing.T) {
	c := DefaultConfig()
	if c.BindAddr != "127.0.0.1" {
		t.Errorf("default bind_addr = %q, want 127.0.0.1", c.BindAddr)
	}
	if c.Plugins.rawExecEnabled() {
		t.Error("raw_exec is on by default")
	}
	if got := c.dockerConfig(); got.AllowVolumes || got.AllowPrivileged || got.AllowHostNetwork {
		t.Errorf("docker config = %+v, want volumes, privileged and host network off", got)
	}
	if got := c.Client.User.userPolicy(); !reflect.DeepEqual(got, client.UserPolicy{}) {
		t.Errorf("user policy = %+v, want the zero (default) policy", got)
	}
	dev := DevConfig()
	if !dev.Plugins.rawExecEnabled() || dev.BindAddr != "127.0.0.1" {
		t.Errorf("dev: raw_exec %v, bind %q; want on and 127.0.0.1", dev.Plugins.rawExecEnabled(), dev.BindAddr)
	}
	// A dev agent's file may still turn raw_exec off.
	off, err := ParseConfig("off.hcl", []byte("plugin \"raw_exec\" {\n  config {\n    enabled = false\n  }\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	dev.Merge(off)
	if dev.Plugins.rawExecEnabled() {
		t.Error("raw_exec still on after a file set enabled = false")
	}
}

func TestSafetyConfig(t *testing.T) {
	fc, err := ParseConfig("agent.hcl", []byte(safetyConfig))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	cfg := DefaultConfig()
	cfg.DataDir = "/d"
	cfg.Merge(fc)
	cfg.Server.Enabled = true
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if !cfg.Plugins.rawExecEnabled() {
		t.Error("raw_exec not enabled")
	}
	if got, want := cfg.dockerConfig(), (docker.Config{AllowVolumes: true, AllowPrivileged: true}); got != want {
		t.Errorf("docker config = %+v, want %+v", got, want)
	}
	want := client.UserPolicy{Denylist: []string{"root", "admin"}, Allowlist: []string{"alice"}}
	if got := cfg.Client.User.userPolicy(); !reflect.DeepEqual(got, want) {
		t.Errorf("user policy = %+v, want %+v", got, want)
	}
	if want := map[string]string{"/bin": "/bin", "/opt/tools": "/tools"}; !reflect.DeepEqual(cfg.Client.ChrootEnv, want) {
		t.Errorf("chroot_env = %v, want %v", cfg.Client.ChrootEnv, want)
	}
	// A later file overrides one switch and keeps the rest.
	later, err := ParseConfig("later.hcl", []byte("plugin \"docker\" {\n  config {\n    allow_host_network = true\n  }\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Merge(later)
	if got, want := cfg.dockerConfig(), (docker.Config{AllowVolumes: true, AllowPrivileged: true, AllowHostNetwork: true}); got != want {
		t.Errorf("merged docker config = %+v, want %+v", got, want)
	}
}

func TestSafetyConfigErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"unknown plugin", "plugin \"qemu\" {\n  config {}\n}\n", `plugin "qemu": unknown plugin`},
		{"unknown raw_exec key", "plugin \"raw_exec\" {\n  config {\n    enable = true\n  }\n}\n", `agent.hcl:3,5`},
		{"unknown docker key", "plugin \"docker\" {\n  config {\n    allow_caps = [\"all\"]\n  }\n}\n", `"allow_caps"`},
		{"wrong type", "plugin \"docker\" {\n  config {\n    allow_privileged = \"yes please\"\n  }\n}\n", `agent.hcl:3,`},
		{"twice", "plugin \"raw_exec\" {\n}\nplugin \"raw_exec\" {\n}\n", `plugin "raw_exec": configured twice`},
		{"user key", "client {\n  user {\n    deny = [\"root\"]\n  }\n}\n", `agent.hcl:3,5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig("agent.hcl", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
	invalid := []struct {
		name   string
		client ClientConfig
		want   string
	}{
		{"relative host path", ClientConfig{ChrootEnv: map[string]string{"bin": "/bin"}}, `client.chroot_env["bin"]`},
		{"root as task path", ClientConfig{ChrootEnv: map[string]string{"/srv": "/"}}, `client.chroot_env["/srv"] = "/"`},
		{"unknown checked driver", ClientConfig{User: &UserConfig{CheckedDrivers: []string{"qemu"}}}, `client.user.checked_drivers: unknown driver "qemu"`},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.DataDir, c.Server.Enabled = "/d", true
			c.Merge(&Config{Client: &tt.client})
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
