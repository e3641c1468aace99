package feasible

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

func testNode() *structs.Node {
	return &structs.Node{
		ID: "node-id-1", Name: "gpu-host-1", Datacenter: "us-west-1", NodeClass: "gpu",
		Attributes: map[string]string{
			"kernel.name":    "linux",
			"kernel.version": "6.8.12",
			"cpu.numcores":   "64",
			"memory.total":   "512 GiB",
			"gpu.cc":         "9.0",
			"driver.version": "550.54.15",
			"os.version":     "1.10",
			"tags":           "ssd, nvme,fast",
			"drover.version": "0.1.0-dev",
		},
		Meta: map[string]string{"rack": "r12", "zone": "a"},
	}
}

func TestCheckerOperators(t *testing.T) {
	tests := []struct {
		lt, op, rt string
		want       bool
	}{
		// Equality and targets.
		{"${node.unique.id}", "=", "node-id-1", true},
		{"${node.unique.name}", "==", "gpu-host-1", true},
		{"${node.datacenter}", "is", "us-west-1", true},
		{"${node.class}", "=", "cpu", false},
		{"${attr.kernel.name}", "=", "linux", true},
		{"${meta.rack}", "=", "r12", true},
		{"${meta.missing}", "=", "", false},
		{"${unknown.thing}", "=", "", false},
		{"${attr.kernel.name}", "!=", "windows", true},
		{"${attr.kernel.name}", "not", "linux", false},
		{"${meta.missing}", "!=", "r12", true},
		// Ordering: numbers, quantities, versions, strings.
		{"${attr.cpu.numcores}", ">=", "64", true},
		{"${attr.cpu.numcores}", ">", "8", true}, // numerically, not "64" < "8"
		{"${attr.cpu.numcores}", "<", "100", true},
		{"${attr.memory.total}", ">", "256 GiB", true},
		{"${attr.memory.total}", "<=", "0.5 TiB", true},
		{"${attr.memory.total}", "<", "500 GB", false}, // 512 GiB is about 550 GB
		{"${attr.gpu.cc}", ">=", "8.6", true},
		{"${attr.gpu.cc}", "<", "10.0", true},    // as versions, not lexically
		{"${attr.os.version}", ">", "1.9", true}, // 1.10 is a later version
		{"${attr.kernel.version}", ">=", "6.1.0", true},
		{"${meta.zone}", "<", "b", true},
		{"${meta.missing}", "<", "b", false},
		// Regular expressions.
		{"${attr.kernel.version}", "regexp", `^6\.`, true},
		{"${attr.kernel.version}", "regexp", `^5\.`, false},
		{"${attr.kernel.version}", "regexp", `(`, false},
		// Version and semver ranges.
		{"${attr.driver.version}", "version", ">= 535, < 560", true},
		{"${attr.driver.version}", "version", ">= 560", false},
		{"${attr.kernel.version}", "semver", "~> 6.8.0", true},
		{"${attr.kernel.version}", "semver", "~> 6.7.0", false},
		{"${attr.kernel.version}", "version", "~> 6.2", true},
		{"${attr.drover.version}", "semver", "< 0.1.0", true}, // a pre-release sorts first
		{"${attr.drover.version}", "semver", "= 0.1.0-dev", true},
		{"${attr.drover.version}", "version", "!= 0.1.0", true},
		{"${attr.kernel.version}", "version", "not-a-version", false},
		// Sets.
		{"${attr.tags}", "set_contains", "nvme,ssd", true},
		{"${attr.tags}", "set_contains_all", "nvme,hdd", false},
		{"${attr.tags}", "set_contains_any", "hdd, fast", true},
		{"${attr.tags}", "set_contains_any", "hdd,tape", false},
		// Presence.
		{"${meta.rack}", "is_set", "", true},
		{"${meta.missing}", "is_set", "", false},
		{"${meta.missing}", "is_not_set", "", true},
		{"${meta.rack}", "is_not_set", "", false},
		// Judged by their own stages.
		{"", "distinct_hosts", "true", true},
		// Unknown operators never hold.
		{"${meta.rack}", "~", "r12", false},
	}
	c := NewChecker()
	resolve := NodeResolver(testNode())
	for _, tt := range tests {
		t.Run(tt.lt+" "+tt.op+" "+tt.rt, func(t *testing.T) {
			if got := c.Holds(tt.lt, tt.op, tt.rt, resolve); got != tt.want {
				t.Errorf("holds: got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeviceResolver(t *testing.T) {
	group := &structs.NodeDeviceResource{
		Vendor: "nvidia", Type: "gpu", Name: "NVIDIA H100 80GB HBM3",
		Attributes: map[string]string{"memory": "80 GiB", "numa_node": "0"},
	}
	inst := &structs.NodeDevice{ID: "GPU-1", Attributes: map[string]string{"numa_node": "1"}}
	tests := []struct {
		target string
		want   string
		ok     bool
	}{
		{"${device.vendor}", "nvidia", true},
		{"${device.type}", "gpu", true},
		{"${device.model}", "NVIDIA H100 80GB HBM3", true},
		{"${device.ids}", "GPU-1", true},
		{"${device.attr.memory}", "80 GiB", true},
		{"${device.attr.numa_node}", "1", true}, // the instance's wins
		{"${device.attr.missing}", "", false},
		{"${attr.kernel.name}", "", false},
		{"literal", "literal", true},
	}
	resolve := DeviceResolver(group, inst)
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			got, ok := resolve(tt.target)
			if got != tt.want || ok != tt.ok {
				t.Errorf("resolve: got %q %v, want %q %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCompareValues(t *testing.T) {
	tests := []struct {
		l, r string
		want int
	}{
		{"80 GiB", "100 GiB", -1},
		{"80 GiB", "80GiB", 0},
		{"1 TiB", "1000 GB", 1},
		{"1.5 GHz", "1500 MHz", 0},
		{"9.0", "10.0", -1},
		{"8.10", "8.9", 1},
		{"10", "9", 1},
		{"1.5", "10", -1},
		{"abc", "abd", -1},
		{"80 GiB", "100", 1}, // different dimensions: lexical, "8" > "1"
	}
	for _, tt := range tests {
		t.Run(tt.l+" vs "+tt.r, func(t *testing.T) {
			if got := compareValues(tt.l, tt.r); got != tt.want {
				t.Errorf("compare: got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestVersionRange(t *testing.T) {
	tests := []struct {
		rng, v string
		want   bool
	}{
		{">= 1.2, < 2.0", "1.2", true},
		{">= 1.2, < 2.0", "1.9.9", true},
		{">= 1.2, < 2.0", "2.0", false},
		{">= 1.2, < 2.0", "1.1.9", false},
		{"1.2.3", "v1.2.3", true},
		{"= 1.2", "1.2.0", true},
		{"~> 1.2", "1.9", true},
		{"~> 1.2", "2.0", false},
		{"~> 1.2.3", "1.2.9", true},
		{"~> 1.2.3", "1.3.0", false},
		{"> 1.0.0-rc.1", "1.0.0-rc.2", true},
		{"> 1.0.0-rc.9", "1.0.0-rc.10", true},
		{"< 1.0.0", "1.0.0-alpha", true},
		{"> 1.0.0-alpha", "1.0.0-beta", true},
		{"= 1.0.0", "1.0.0+build5", true},
	}
	for _, tt := range tests {
		t.Run(tt.rng+" "+tt.v, func(t *testing.T) {
			vr, ok := parseVersionRange(tt.rng)
			if !ok {
				t.Fatalf("parse %q: not a range", tt.rng)
			}
			v, ok := parseVersion(tt.v)
			if !ok {
				t.Fatalf("parse %q: not a version", tt.v)
			}
			if got := vr.matches(v); got != tt.want {
				t.Errorf("matches: got %v, want %v", got, tt.want)
			}
		})
	}
	for _, bad := range []string{"", ">= ", "1.x", ">= 1, < two"} {
		if _, ok := parseVersionRange(bad); ok {
			t.Errorf("parse %q: got a range, want an error", bad)
		}
	}
}

func TestNodeFilters(t *testing.T) {
	ready := func() *structs.Node {
		n := testNode()
		n.Status = structs.NodeStatusReady
		n.Drivers = map[string]*structs.DriverInfo{"docker": {Detected: true, Healthy: true}}
		n.Attributes["driver.raw_exec"] = "1"
		return n
	}
	tests := []struct {
		name   string
		filter Filter
		node   *structs.Node
		reason string // "" = passes
	}{
		{"ready", ReadyFilter{}, ready(), ""},
		{"initializing", ReadyFilter{}, testNode(), ReasonNodeNotReady},
		{"dc exact", NewDatacenterFilter([]string{"us-west-1"}), ready(), ""},
		{"dc glob", NewDatacenterFilter([]string{"eu-*", "us-*"}), ready(), ""},
		{"dc star", NewDatacenterFilter([]string{"*"}), ready(), ""},
		{"dc inner glob", NewDatacenterFilter([]string{"us-*-1"}), ready(), ""},
		{"dc glob miss", NewDatacenterFilter([]string{"us-*-2", "eu*"}), ready(), ReasonMissingDatacenter},
		{"dc other", NewDatacenterFilter([]string{"us-east-1"}), ready(), ReasonMissingDatacenter},
		{"driver info", NewDriverFilter([]string{"docker"}), ready(), ""},
		{"driver attribute", NewDriverFilter([]string{"raw_exec"}), ready(), ""},
		{"driver missing", NewDriverFilter([]string{"exec"}), ready(), "driver exec not available"},
		{"drivers missing", NewDriverFilter([]string{"qemu", "exec", "docker"}), ready(), "drivers exec, qemu not available"},
		{
			"distinct_property left to its own filter", NewConstraintFilter([]*structs.Constraint{{LTarget: "${meta.rack}", Operand: "distinct_property"}}, NewChecker()),
			ready(), "",
		},
		{
			"distinct_hosts left alone", NewConstraintFilter([]*structs.Constraint{{Operand: "distinct_hosts"}}, NewChecker()),
			ready(), "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, reason := tt.filter.Filter(tt.node)
			if ok != (tt.reason == "") || reason != tt.reason {
				t.Errorf("filter: got %v %q, want reason %q", ok, reason, tt.reason)
			}
		})
	}
}
