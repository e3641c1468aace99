// Package fingerprint reads the host facts a client reports on its node:
// CPU (cores, MHz, total compute), memory, operating system and kernel,
// hostname. Facts come from files under a root directory (/proc, /etc),
// parsed by pure functions so they are tested on fixture text.
//
// It owns host facts only: GPUs are fingerprinted by client/devices/*,
// task drivers by drivers/*. It must not talk to servers.
package fingerprint

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/structs"
)

// DefaultMHz is the per-core speed assumed when the host does not say.
const DefaultMHz = 1000

// Node attribute keys this package sets.
const (
	AttrKernelName    = "kernel.name"
	AttrKernelVersion = "kernel.version"
	AttrOSName        = "os.name"
	AttrOSVersion     = "os.version"
	AttrCPUArch       = "cpu.arch"
	AttrCPUNumCores   = "cpu.numcores"
	AttrCPUFrequency  = "cpu.frequency"
	AttrCPUTotal      = "cpu.totalcompute"
	AttrCPUModel      = "cpu.modelname"
	AttrHostname      = "unique.hostname"
	AttrMemoryTotal   = "memory.totalbytes"
	AttrVersion       = "drover.version"
)

// Host is what the fingerprint found.
type Host struct {
	Attributes map[string]string
	CPU        structs.NodeCpuResources
	Memory     structs.NodeMemoryResources
}

// Config says where to look. The zero value reads the running host.
type Config struct {
	// Root is the filesystem root holding proc/ and etc/; "" is "/".
	Root string
	// NumCPU returns the usable cores; nil is runtime.NumCPU.
	NumCPU func() int
	Logger hclog.Logger
}

// Fingerprint reads the host's facts. Missing CPU or OS details fall back
// to defaults with a log line; memory is required, since a node without
// memory cannot be scheduled on.
func Fingerprint(cfg Config) (*Host, error) {
	root := cfg.Root
	if root == "" {
		root = "/"
	}
	numCPU := cfg.NumCPU
	if numCPU == nil {
		numCPU = runtime.NumCPU
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			logger.Debug("host fact unavailable", "file", rel, "error", err)
		}
		return string(b)
	}

	h := &Host{Attributes: map[string]string{
		AttrCPUArch: runtime.GOARCH,
		AttrVersion: structs.Version,
	}}
	cpu := ParseCPUInfo(read("proc/cpuinfo"))
	if cpu.MHz <= 0 {
		logger.Warn("CPU speed unknown; assuming default", "mhz", DefaultMHz)
		cpu.MHz = DefaultMHz
	}
	h.CPU = CPUResources(numCPU(), cpu.MHz)
	h.Attributes[AttrCPUNumCores] = strconv.Itoa(int(h.CPU.TotalCpuCores))
	h.Attributes[AttrCPUFrequency] = strconv.Itoa(int(math.Round(cpu.MHz)))
	h.Attributes[AttrCPUTotal] = strconv.FormatInt(h.CPU.CpuShares, 10)
	if cpu.ModelName != "" {
		h.Attributes[AttrCPUModel] = cpu.ModelName
	}

	memBytes, err := ParseMemTotal(read("proc/meminfo"))
	if err != nil {
		return nil, fmt.Errorf("fingerprint memory: %w", err)
	}
	h.Memory = structs.NodeMemoryResources{MemoryMB: int64(memBytes / (1 << 20))}
	h.Attributes[AttrMemoryTotal] = strconv.FormatUint(memBytes, 10)

	kernel := strings.ToLower(strings.TrimSpace(read("proc/sys/kernel/ostype")))
	if kernel == "" {
		kernel = runtime.GOOS
	}
	h.Attributes[AttrKernelName] = kernel
	if v := strings.TrimSpace(read("proc/sys/kernel/osrelease")); v != "" {
		h.Attributes[AttrKernelVersion] = v
	}
	osName, osVersion := ParseOSRelease(read("etc/os-release"))
	if osName == "" {
		osName = runtime.GOOS
	}
	h.Attributes[AttrOSName] = osName
	if osVersion != "" {
		h.Attributes[AttrOSVersion] = osVersion
	}

	host := strings.TrimSpace(read("proc/sys/kernel/hostname"))
	if host == "" && root == "/" {
		host, _ = os.Hostname()
	}
	if host != "" {
		h.Attributes[AttrHostname] = host
	}
	return h, nil
}

// CPUInfo is what /proc/cpuinfo says about the CPU.
type CPUInfo struct {
	ModelName string
	// MHz is the fastest core's current speed, or the speed in the model
	// name ("@ 2.20GHz"), or 0 when neither is given.
	MHz float64
}

var modelGHz = regexp.MustCompile(`@\s*([0-9.]+)\s*GHz`)

// ParseCPUInfo parses /proc/cpuinfo text.
func ParseCPUInfo(text string) CPUInfo {
	var info CPUInfo
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "model name":
			if info.ModelName == "" {
				info.ModelName = val
			}
		case "cpu MHz":
			if mhz, err := strconv.ParseFloat(val, 64); err == nil && mhz > info.MHz {
				info.MHz = mhz
			}
		}
	}
	if info.MHz == 0 {
		if m := modelGHz.FindStringSubmatch(info.ModelName); m != nil {
			if ghz, err := strconv.ParseFloat(m[1], 64); err == nil {
				info.MHz = ghz * 1000
			}
		}
	}
	return info
}

// CPUResources is the node's CPU capacity: total compute is cores times
// the per-core speed rounded to whole MHz (so it equals cpu.numcores times
// cpu.frequency).
func CPUResources(cores int, mhz float64) structs.NodeCpuResources {
	if cores < 1 {
		cores = 1
	}
	if cores > math.MaxUint16 {
		cores = math.MaxUint16
	}
	return structs.NodeCpuResources{
		CpuShares:     int64(cores) * int64(math.Round(mhz)),
		TotalCpuCores: uint16(cores),
	}
}

// ParseMemTotal returns MemTotal from /proc/meminfo text, in bytes.
func ParseMemTotal(text string) (uint64, error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(key) != "MemTotal" {
			continue
		}
		fields := strings.Fields(val)
		if len(fields) == 0 {
			break
		}
		n, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("MemTotal %q: %w", val, err)
		}
		if len(fields) > 1 && fields[1] != "kB" {
			return 0, fmt.Errorf("MemTotal %q: unknown unit", val)
		}
		return n * 1024, nil
	}
	return 0, errors.New("no MemTotal in meminfo")
}

// ParseOSRelease returns ID and VERSION_ID from /etc/os-release text.
func ParseOSRelease(text string) (id, version string) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		key, val, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}
		val = strings.Trim(val, `"'`)
		switch key {
		case "ID":
			id = val
		case "VERSION_ID":
			version = val
		}
	}
	return id, version
}
