package client

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/droverhq/drover/client/gpuhistory"
	"github.com/droverhq/drover/structs"
)

// GPU utilisation history: a loop the client owns samples every GPU
// every GPUHistory.Interval into the Recorder (client/gpuhistory), which
// keeps GPUHistory.Window of them per GPU and decides which allocations
// leave their GPUs idle. The servers route the history ops here
// (ops.go).

// startGPUHistory starts the sampler under c.loops; it stops with ctx.
func (c *Client) startGPUHistory(ctx context.Context) {
	c.loops.Add(1)
	go func() {
		defer c.loops.Done()
		t := time.NewTicker(c.history.Config().Interval)
		defer t.Stop()
		c.sampleGPUs(time.Now())
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				c.sampleGPUs(now)
			}
		}
	}()
}

// sampleGPUs records one reading of every GPU, and which allocation
// holds which, at now.
func (c *Client) sampleGPUs(now time.Time) {
	node := c.Node()
	var known []string
	if node.NodeResources != nil {
		for _, g := range node.NodeResources.Devices {
			for _, inst := range g.Instances {
				known = append(known, inst.ID)
			}
		}
	}
	c.history.Record(now, c.deviceStats(node, nil), known, c.gpuHolds())
}

// gpuHolds maps each live allocation to the GPUs it holds.
func (c *Client) gpuHolds() map[string][]string {
	holds := map[string][]string{}
	for _, a := range c.liveAllocs() {
		holds[a.ID] = a.DeviceIDs()
	}
	return holds
}

// simulatedLoad returns the utilisation each held GPU (held) shows if
// it is simulated: simulated.BusyUtilPercent, unless the allocations
// holding it set structs.MetaSimulatedGPUUtil; with several holders the
// busiest wins.
func (c *Client) simulatedLoad(held map[string]bool, busy float64) map[string]float64 {
	load := map[string]float64{}
	for _, a := range c.liveAllocs() {
		u, ok := allocSimulatedUtil(a)
		if !ok {
			u = busy
		}
		for _, id := range a.DeviceIDs() {
			if cur, seen := load[id]; !seen || u > cur {
				load[id] = u
			}
		}
	}
	for id := range held {
		if _, ok := load[id]; !ok {
			load[id] = busy
		}
	}
	return load
}

// allocSimulatedUtil reads structs.MetaSimulatedGPUUtil from the
// allocation's group meta, else its job's.
func allocSimulatedUtil(a *structs.Allocation) (float64, bool) {
	if a.Job == nil {
		return 0, false
	}
	v, ok := a.Job.Meta[structs.MetaSimulatedGPUUtil]
	if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
		if gv, gok := tg.Meta[structs.MetaSimulatedGPUUtil]; gok {
			v, ok = gv, true
		}
	}
	if !ok {
		return 0, false
	}
	u, err := strconv.ParseFloat(v, 64)
	if err != nil || u < 0 || u > 100 {
		return 0, false
	}
	return u, true
}

// NodeGPUHistory returns the history of every GPU of the node over the
// last window (0: all of it).
func (c *Client) NodeGPUHistory(window time.Duration) *structs.GPUHistoryResponse {
	resp := c.history.History(nil, window)
	resp.NodeID = c.NodeID()
	return resp
}

// AllocGPUHistory returns the history of the GPUs an allocation this
// client runs holds, with its idle verdict. An allocation it does not
// run is an error wrapping ErrUnknownAlloc.
func (c *Client) AllocGPUHistory(allocID string, window time.Duration) (*structs.GPUHistoryResponse, error) {
	r, err := c.runnerOf(allocID)
	if err != nil {
		return nil, fmt.Errorf("allocation GPU history: %w", err)
	}
	resp := c.history.AllocHistory(allocID, r.ar.Alloc().DeviceIDs(), window)
	resp.NodeID = c.NodeID()
	return resp, nil
}

func (c *Client) opNodeGPUHistory(_ context.Context, args []byte) (any, error) {
	var req structs.GPUHistoryRequest
	if err := decodeArgs(args, &req); err != nil {
		return nil, err
	}
	return c.NodeGPUHistory(req.Window), nil
}

func (c *Client) opAllocGPUHistory(_ context.Context, args []byte) (any, error) {
	var req structs.GPUHistoryRequest
	if err := decodeArgs(args, &req); err != nil {
		return nil, err
	}
	return c.AllocGPUHistory(req.AllocID, req.Window)
}

// validGPUHistory reports a GPUHistory config error.
func validGPUHistory(cfg gpuhistory.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	return nil
}
