package docker

import (
	"net/netip"
	"testing"

	"github.com/moby/moby/api/types/network"

	"github.com/droverhq/drover/structs"
)

func TestCreateOptionsPortLabels(t *testing.T) {
	cfg := specTask(map[string]any{"image": "i", "ports": []any{"http", "raw"}})
	cfg.Ports = []structs.AllocatedPortMapping{
		{Label: "http", Value: 23456, To: 8080, HostIP: "127.0.0.1"},
		{Label: "raw", Value: 9100, HostIP: "127.0.0.1"},
		{Label: "unused", Value: 9200, HostIP: "127.0.0.1"},
	}
	opts, err := CreateOptions(cfg, Config{})
	if err != nil {
		t.Fatalf("CreateOptions: %v", err)
	}
	lo := netip.MustParseAddr("127.0.0.1")
	tests := []struct {
		ctr  string
		want network.PortBinding
	}{
		{"8080/tcp", network.PortBinding{HostIP: lo, HostPort: "23456"}},
		{"8080/udp", network.PortBinding{HostIP: lo, HostPort: "23456"}},
		{"9100/tcp", network.PortBinding{HostIP: lo, HostPort: "9100"}},
	}
	for _, tt := range tests {
		port := network.MustParsePort(tt.ctr)
		if _, ok := opts.Config.ExposedPorts[port]; !ok {
			t.Errorf("%s not exposed: %v", tt.ctr, opts.Config.ExposedPorts)
		}
		if got := opts.HostConfig.PortBindings[port]; len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s bindings: got %+v, want %+v", tt.ctr, got, tt.want)
		}
	}
	if n := len(opts.HostConfig.PortBindings); n != 4 {
		t.Errorf("bindings: got %d, want 4 (the unused label is not bound)", n)
	}
}
