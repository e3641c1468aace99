package docker

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// Labels the driver sets on every container it creates, besides the
// task's own labels.
const (
	LabelTaskID   = "com.droverhq.task_id"
	LabelAllocID  = "com.droverhq.alloc_id"
	LabelTaskName = "com.droverhq.task_name"
	LabelJobName  = "com.droverhq.job_name"
	// LabelAllocDir is the task's alloc dir on the host (its task dir's
	// parent), set when the task has a task dir. The client's data dir
	// is its own (locked), so the label tells the containers of one
	// client from those of others sharing the engine: KillOrphans
	// touches only containers whose alloc dir is under its alloc root.
	LabelAllocDir = "com.droverhq.alloc_dir"
)

// CDIKind is the CDI device kind GPUs are named with when Config.UseCDI
// is set: "nvidia.com/gpu=<uuid>".
const CDIKind = "nvidia.com/gpu"

// taskSpec is the driver config of one task, parsed.
type taskSpec struct {
	image       string
	command     string
	args        []string
	entrypoint  []string
	labels      map[string]string
	ports       []string
	volumes     []string
	mounts      []mount.Mount
	networkMode string
	privileged  bool
}

// CreateOptions builds what the driver asks the engine to create for
// the task: image, command, user, environment, labels, ports, volumes,
// resources and GPU device requests. It does no I/O, so tests (and
// tools) can check the container a task would get without an engine.
// What opts does not allow (host volumes, privileged, the host network)
// is refused with an error wrapping drivers.ErrDisabled.
func CreateOptions(cfg *drivers.TaskConfig, opts Config) (client.ContainerCreateOptions, error) {
	spec, err := parseSpec(cfg.Config)
	if err != nil {
		return client.ContainerCreateOptions{}, err
	}
	if err := spec.allowed(opts); err != nil {
		return client.ContainerCreateOptions{}, err
	}
	ccfg := &container.Config{
		Image:      spec.image,
		User:       cfg.User,
		Env:        cfg.EnvList(),
		Entrypoint: spec.entrypoint,
		Labels:     containerLabels(cfg, spec.labels),
	}
	switch {
	case spec.command != "":
		ccfg.Cmd = append([]string{spec.command}, spec.args...)
	case len(spec.args) > 0:
		ccfg.Cmd = spec.args
	}
	volumes, err := hostVolumeMounts(cfg.Mounts) // volumes.go
	if err != nil {
		return client.ContainerCreateOptions{}, err
	}
	host := &container.HostConfig{
		Binds:       spec.volumes,
		Mounts:      append(spec.mounts, volumes...),
		NetworkMode: container.NetworkMode(spec.networkMode),
		Privileged:  spec.privileged,
	}
	if len(spec.ports) > 0 {
		exposed, bindings, err := portBindings(spec.ports, cfg.Ports)
		if err != nil {
			return client.ContainerCreateOptions{}, err
		}
		ccfg.ExposedPorts, host.PortBindings = exposed, bindings
	}
	if r := cfg.Resources; r != nil {
		host.CPUShares = r.Cpu.CpuShares
		host.Memory = r.Memory.MemoryMB << 20
		if r.Memory.MemoryMaxMB > r.Memory.MemoryMB {
			// memory_max: the reservation is memory, the limit memory_max.
			host.MemoryReservation, host.Memory = r.Memory.MemoryMB<<20, r.Memory.MemoryMaxMB<<20
		}
	}
	host.DeviceRequests = deviceRequests(cfg.DeviceIDs, opts.UseCDI)
	return client.ContainerCreateOptions{
		Name:       containerName(cfg.ID),
		Config:     ccfg,
		HostConfig: host,
	}, nil
}

// allowed refuses what the client's plugin "docker" config does not
// allow, naming the task's setting and the switch that allows it.
func (s *taskSpec) allowed(opts Config) error {
	const how = `; allow it with %s in the config block of the agent config's plugin "docker" block`
	if !opts.AllowVolumes {
		if len(s.volumes) > 0 {
			return fmt.Errorf("%w: docker volumes %q mount host paths, which this client does not allow"+how,
				drivers.ErrDisabled, s.volumes, "volumes { enabled = true }")
		}
		for i, m := range s.mounts {
			// Only a tmpfs touches nothing of the host's (bind, volume,
			// npipe, cluster and whatever a newer engine adds may).
			if m.Type != mount.TypeTmpfs {
				return fmt.Errorf("%w: docker mounts[%d] (type %q, source %q) is a %s mount, which this client does not allow"+how,
					drivers.ErrDisabled, i, m.Type, m.Source, m.Type, "volumes { enabled = true }")
			}
		}
	}
	if s.privileged && !opts.AllowPrivileged {
		return fmt.Errorf("%w: docker privileged = true is not allowed on this client"+how,
			drivers.ErrDisabled, "allow_privileged = true")
	}
	// container:<name> joins another container's network, which may be
	// the host's: both need the switch.
	if (s.networkMode == "host" || strings.HasPrefix(s.networkMode, "container:")) && !opts.AllowHostNetwork {
		return fmt.Errorf("%w: docker network_mode = %q is not allowed on this client"+how,
			drivers.ErrDisabled, s.networkMode, "allow_host_network = true")
	}
	return nil
}

// deviceRequests asks for exactly the assigned GPUs: by UUID through the
// NVIDIA runtime, or by CDI name.
func deviceRequests(ids []string, useCDI bool) []container.DeviceRequest {
	if len(ids) == 0 {
		return nil
	}
	if useCDI {
		names := make([]string, len(ids))
		for i, id := range ids {
			names[i] = CDIKind + "=" + id
		}
		return []container.DeviceRequest{{Driver: "cdi", DeviceIDs: names}}
	}
	return []container.DeviceRequest{{
		Driver:       "nvidia",
		DeviceIDs:    append([]string(nil), ids...),
		Capabilities: [][]string{{"gpu"}},
	}}
}

func containerLabels(cfg *drivers.TaskConfig, own map[string]string) map[string]string {
	labels := make(map[string]string, len(own)+4)
	for k, v := range own {
		labels[k] = v
	}
	labels[LabelTaskID] = cfg.ID
	labels[LabelAllocID] = cfg.AllocID
	labels[LabelTaskName] = cfg.TaskName
	labels[LabelJobName] = cfg.JobName
	if cfg.TaskDir != "" {
		labels[LabelAllocDir] = filepath.Dir(filepath.Clean(cfg.TaskDir))
	} else {
		delete(labels, LabelAllocDir) // never the task's own choice
	}
	return labels
}

var nameUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// containerName is the task ID made safe for the engine, with a random
// suffix: task IDs are unique only among the tasks one driver holds, and
// a container left by an earlier run (a crash, a task started again
// under its ID) must not make create fail with a name conflict.
func containerName(taskID string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "drover-" + nameUnsafe.ReplaceAllString(taskID, "_") + "-" + hex.EncodeToString(b[:])
}

// portBindings turns the task's ports into the exposed ports and their
// host bindings: a label (Nomad's `ports = ["http"]`) binds the
// allocation's port of that label on its host address to the port's
// "to" (or the same port); "host:container[/proto]" binds as written.
func portBindings(ports []string, allocated []structs.AllocatedPortMapping) (network.PortSet, network.PortMap, error) {
	exposed := network.PortSet{}
	bindings := network.PortMap{}
	for _, p := range ports {
		if !strings.Contains(p, ":") {
			if err := bindLabel(p, allocated, exposed, bindings); err != nil {
				return nil, nil, err
			}
			continue
		}
		hostPort, ctrPort, ok := strings.Cut(p, ":")
		if !ok || hostPort == "" || ctrPort == "" {
			return nil, nil, fmt.Errorf("%w: port %q: want \"host:container\"", drivers.ErrInvalidConfig, p)
		}
		port, err := network.ParsePort(ctrPort)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: port %q: %v", drivers.ErrInvalidConfig, p, err)
		}
		exposed[port] = struct{}{}
		bindings[port] = append(bindings[port], network.PortBinding{HostPort: hostPort})
	}
	return exposed, bindings, nil
}

func parseSpec(raw map[string]any) (*taskSpec, error) {
	s := &taskSpec{}
	var err error
	if s.image, err = stringKey(raw, "image"); err != nil {
		return nil, err
	}
	if s.image == "" {
		return nil, fmt.Errorf("%w: image is required", drivers.ErrInvalidConfig)
	}
	if s.command, err = stringKey(raw, "command"); err != nil {
		return nil, err
	}
	if s.networkMode, err = stringKey(raw, "network_mode"); err != nil {
		return nil, err
	}
	switch v := raw["privileged"].(type) {
	case nil:
	case bool:
		s.privileged = v
	default:
		return nil, fmt.Errorf("%w: privileged must be a bool, got %T", drivers.ErrInvalidConfig, v)
	}
	for key, dst := range map[string]*[]string{
		"args": &s.args, "entrypoint": &s.entrypoint, "ports": &s.ports, "volumes": &s.volumes,
	} {
		if *dst, err = stringList(raw, key); err != nil {
			return nil, err
		}
	}
	if s.labels, err = stringMap(raw["labels"], "labels"); err != nil {
		return nil, err
	}
	for _, v := range s.volumes {
		if err := checkVolume(v); err != nil {
			return nil, err
		}
	}
	if s.mounts, err = parseMounts(raw["mounts"]); err != nil {
		return nil, err
	}
	return s, nil
}

// checkVolume accepts "host:container" and "host:container:ro|rw".
func checkVolume(v string) error {
	parts := strings.Split(v, ":")
	ok := (len(parts) == 2 || len(parts) == 3) && parts[0] != "" && strings.HasPrefix(parts[1], "/")
	if ok && len(parts) == 3 {
		ok = parts[2] == "ro" || parts[2] == "rw"
	}
	if !ok {
		return fmt.Errorf("%w: volume %q: want \"host:/container[:ro]\"", drivers.ErrInvalidConfig, v)
	}
	return nil
}

// parseMounts reads a list of {type, source, target, readonly} blocks;
// type defaults to "bind".
func parseMounts(v any) ([]mount.Mount, error) {
	if v == nil {
		return nil, nil
	}
	items, ok := v.([]any)
	if !ok {
		if ms, isMaps := v.([]map[string]any); isMaps {
			for _, m := range ms {
				items = append(items, m)
			}
		} else {
			return nil, fmt.Errorf("%w: mounts must be a list of blocks, got %T", drivers.ErrInvalidConfig, v)
		}
	}
	out := make([]mount.Mount, 0, len(items))
	for i, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: mounts[%d] must be a block, got %T", drivers.ErrInvalidConfig, i, item)
		}
		typ, _ := m["type"].(string)
		if typ == "" {
			typ = string(mount.TypeBind)
		}
		source, _ := m["source"].(string)
		target, _ := m["target"].(string)
		readonly, _ := m["readonly"].(bool)
		if target == "" {
			return nil, fmt.Errorf("%w: mounts[%d]: target is required", drivers.ErrInvalidConfig, i)
		}
		out = append(out, mount.Mount{Type: mount.Type(typ), Source: source, Target: target, ReadOnly: readonly})
	}
	return out, nil
}

func stringKey(raw map[string]any, key string) (string, error) {
	v, ok := raw[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: %s must be a string, got %T", drivers.ErrInvalidConfig, key, v)
	}
	return s, nil
}

func stringList(raw map[string]any, key string) ([]string, error) {
	switch v := raw[key].(type) {
	case nil:
		return nil, nil
	case []string:
		return append([]string(nil), v...), nil
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%w: %s[%d] must be a string, got %T", drivers.ErrInvalidConfig, key, i, e)
			}
			out[i] = s
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%w: %s must be a list of strings, got %T", drivers.ErrInvalidConfig, key, v)
	}
}

func stringMap(v any, key string) (map[string]string, error) {
	switch m := v.(type) {
	case nil:
		return nil, nil
	case map[string]string:
		return m, nil
	case map[string]any:
		out := make(map[string]string, len(m))
		for k := range m {
			s, ok := m[k].(string)
			if !ok {
				return nil, fmt.Errorf("%w: %s[%q] must be a string, got %T", drivers.ErrInvalidConfig, key, k, m[k])
			}
			out[k] = s
		}
		return out, nil
	case []any: // an HCL block decodes as a list of maps
		out := map[string]string{}
		for _, block := range m {
			sub, err := stringMap(block, key)
			if err != nil {
				return nil, err
			}
			for k, s := range sub {
				out[k] = s
			}
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%w: %s must be a map of strings, got %T", drivers.ErrInvalidConfig, key, v)
	}
}

// bindLabel adds the binding of the allocated port labelled label, on
// TCP and UDP.
func bindLabel(label string, allocated []structs.AllocatedPortMapping, exposed network.PortSet, bindings network.PortMap) error {
	i := slices.IndexFunc(allocated, func(m structs.AllocatedPortMapping) bool { return m.Label == label })
	if i < 0 {
		return fmt.Errorf("%w: ports: %q is not a port of the allocation's network", drivers.ErrInvalidConfig, label)
	}
	m := allocated[i]
	to := m.To
	if to <= 0 {
		to = m.Value
	}
	for _, proto := range []string{"tcp", "udp"} {
		port, err := network.ParsePort(fmt.Sprintf("%d/%s", to, proto))
		if err != nil {
			return fmt.Errorf("%w: ports: %q: %v", drivers.ErrInvalidConfig, label, err)
		}
		exposed[port] = struct{}{}
		bindings[port] = append(bindings[port], network.PortBinding{HostIP: hostIP(m.HostIP), HostPort: strconv.Itoa(m.Value)})
	}
	return nil
}

// hostIP is the address a port binds on: the allocation's, or every
// address when it has none or it does not parse.
func hostIP(s string) netip.Addr {
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return ip
}
