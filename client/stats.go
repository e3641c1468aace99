package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/droverhq/drover/client/devices/nvidia"
	"github.com/droverhq/drover/client/devices/simulated"
	"github.com/droverhq/drover/structs"
)

// Stats are read when asked for, not sampled in the background: NVML
// answers in microseconds and the simulated GPUs' numbers are computed,
// so a reader polling every few seconds costs little, and nothing runs
// while nobody looks. Host CPU use is measured over cpuWindow.
const cpuWindow = 100 * time.Millisecond

// NodeStats returns the node's current usage: host CPU and memory (nil
// when /proc cannot be read) and every GPU it reports. It blocks for
// about cpuWindow, less if ctx ends.
func (c *Client) NodeStats(ctx context.Context) *structs.NodeStats {
	node := c.Node()
	host, err := readHostStats(ctx, "/", cpuWindow)
	if err != nil {
		c.logger.Debug("host stats", "error", err)
	}
	ns := &structs.NodeStats{
		NodeID:    node.ID,
		Timestamp: time.Now().UnixNano(),
		Host:      host,
		Devices:   c.deviceStats(node, nil),
	}
	if node.NodeResources != nil {
		ns.FillNomad(node.NodeResources.Devices)
	}
	return ns
}

// AllocStats returns the current usage of the GPUs an allocation this
// client runs holds. An allocation it does not run is an error wrapping
// ErrUnknownAlloc.
func (c *Client) AllocStats(allocID string) (*structs.AllocStats, error) {
	c.allocMu.Lock()
	r := c.runners[allocID]
	c.allocMu.Unlock()
	if r == nil {
		return nil, fmt.Errorf("allocation stats %s: %w", allocID, ErrUnknownAlloc)
	}
	want := map[string]bool{}
	for _, id := range r.ar.Alloc().DeviceIDs() {
		want[id] = true
	}
	out := &structs.AllocStats{AllocID: allocID, Timestamp: time.Now().UnixNano(), Devices: []*structs.DeviceStats{}}
	if len(want) > 0 {
		out.Devices = c.deviceStats(c.Node(), want)
	}
	return out, nil
}

// deviceStats reads the stats of node's GPUs, only those in only when it
// is not nil, in the node's order. NVML is asked only when the node has
// NVIDIA GPUs; its failure leaves them out.
func (c *Client) deviceStats(node *structs.Node, only map[string]bool) []*structs.DeviceStats {
	var groups []*structs.NodeDeviceResource
	if node.NodeResources != nil {
		groups = node.NodeResources.Devices
	}
	var order, nvmlIDs []string
	for _, g := range groups {
		sim := g.Attributes[structs.DeviceAttrSimulated] == "true"
		for _, inst := range g.Instances {
			if only != nil && !only[inst.ID] {
				continue
			}
			order = append(order, inst.ID)
			if !sim {
				nvmlIDs = append(nvmlIDs, inst.ID)
			}
		}
	}
	byID := map[string]*structs.DeviceStats{}
	for _, s := range simulated.StatsLoad(groups, c.simulatedLoad(c.heldDevices(), simulated.BusyUtilPercent), time.Now()) {
		byID[s.ID] = s
	}
	if len(nvmlIDs) > 0 {
		lib := c.cfg.NVML
		if lib == nil {
			lib = nvml.New()
		}
		stats, err := nvidia.Stats(lib, nvmlIDs)
		if err != nil {
			c.logger.Debug("NVIDIA GPU stats", "error", err)
		}
		for _, s := range stats {
			byID[s.ID] = s
		}
	}
	out := make([]*structs.DeviceStats, 0, len(order))
	for _, id := range order {
		if s := byID[id]; s != nil {
			out = append(out, s)
		}
	}
	return out
}

// heldDevices returns the GPUs the client's live allocations hold.
func (c *Client) heldDevices() map[string]bool {
	c.allocMu.Lock()
	runners := make([]*runner, 0, len(c.runners))
	for _, r := range c.runners {
		runners = append(runners, r)
	}
	c.allocMu.Unlock()
	held := map[string]bool{}
	for _, r := range runners {
		a := r.ar.Alloc()
		if a == nil || a.ClientTerminalStatus() {
			continue
		}
		for _, id := range a.DeviceIDs() {
			held[id] = true
		}
	}
	return held
}

// readHostStats reads the host's CPU use over window, memory and uptime
// from the proc files under root.
func readHostStats(ctx context.Context, root string, window time.Duration) (*structs.HostStats, error) {
	statPath := filepath.Join(root, "proc/stat")
	before, err := readCPUTimes(statPath)
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(window)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	after, err := readCPUTimes(statPath)
	if err != nil {
		return nil, err
	}
	hs := &structs.HostStats{CPUPercent: cpuPercent(before, after)}
	mem, err := os.ReadFile(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return nil, fmt.Errorf("host memory: %w", err)
	}
	if hs.MemoryTotalBytes, hs.MemoryUsedBytes, err = parseMemInfo(string(mem)); err != nil {
		return nil, err
	}
	if up, err := os.ReadFile(filepath.Join(root, "proc/uptime")); err == nil {
		if f := strings.Fields(string(up)); len(f) > 0 {
			secs, _ := strconv.ParseFloat(f[0], 64)
			hs.UptimeSeconds = uint64(secs)
		}
	}
	return hs, nil
}

// cpuTimes is the aggregate "cpu" line of /proc/stat: busy and total
// jiffies.
type cpuTimes struct{ busy, total uint64 }

func readCPUTimes(path string) (cpuTimes, error) {
	f, err := os.Open(path)
	if err != nil {
		return cpuTimes{}, fmt.Errorf("host cpu: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if sc.Scan() {
		return parseCPULine(sc.Text())
	}
	return cpuTimes{}, errors.New("host cpu: empty /proc/stat")
}

// parseCPULine parses "cpu user nice system idle iowait irq softirq
// steal ...": idle and iowait are idle time, the rest busy.
func parseCPULine(line string) (cpuTimes, error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("host cpu: unexpected /proc/stat line %q", line)
	}
	var t cpuTimes
	// Fields after steal (guest, guest_nice) are already counted in user.
	for i, s := range f[1:min(len(f), 9)] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("host cpu: field %d of %q: %w", i+1, line, err)
		}
		t.total += v
		if i != 3 && i != 4 { // idle, iowait
			t.busy += v
		}
	}
	return t, nil
}

func cpuPercent(before, after cpuTimes) float64 {
	if after.total <= before.total || after.busy < before.busy {
		return 0
	}
	return 100 * float64(after.busy-before.busy) / float64(after.total-before.total)
}

// parseMemInfo returns total and used (total less available) bytes from
// /proc/meminfo text.
func parseMemInfo(text string) (total, used uint64, err error) {
	var avail uint64
	var haveTotal, haveAvail bool
	for _, line := range strings.Split(text, "\n") {
		key, rest, ok := strings.Cut(line, ":")
		if !ok || (key != "MemTotal" && key != "MemAvailable") {
			continue
		}
		kb, perr := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if perr != nil {
			return 0, 0, fmt.Errorf("host memory: %s: %w", key, perr)
		}
		if key == "MemTotal" {
			total, haveTotal = kb<<10, true
		} else {
			avail, haveAvail = kb<<10, true
		}
	}
	if !haveTotal || !haveAvail {
		return 0, 0, errors.New("host memory: no MemTotal or MemAvailable in /proc/meminfo")
	}
	return total, total - min(avail, total), nil
}
