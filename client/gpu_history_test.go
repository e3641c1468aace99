package client

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/droverhq/drover/client/devices/simulated"
	"github.com/droverhq/drover/client/gpuhistory"
	"github.com/droverhq/drover/structs"
)

// TestGPUHistory: the client samples every GPU into a bounded history;
// an allocation whose simulated GPU reports 0% (simulated_gpu_util = 0)
// for the idle window is idle, a busy one is not.
func TestGPUHistory(t *testing.T) {
	fs := newFakeServer(t, time.Minute)
	cfg := testConfig(t, fs.addr())
	cfg.SimulatedGPUs = []simulated.Config{{Count: 3}}
	cfg.GPUHistory = gpuhistory.Config{Interval: 100 * time.Millisecond, Window: 2 * time.Second, IdleWindow: 500 * time.Millisecond}
	c := startClient(t, cfg)
	waitFor(t, "registration", func() bool { return fs.node(c.NodeID()) != nil })
	gpus := c.Node().NodeResources.Devices[0].SortedDeviceIDs()

	idle := batchAlloc(c.NodeID(), "sleep 30", gpus[0])
	idle.Job.TaskGroups[0].Meta = map[string]string{structs.MetaSimulatedGPUUtil: "0"}
	busy := batchAlloc(c.NodeID(), "sleep 30", gpus[1])
	fs.putAlloc(idle)
	fs.putAlloc(busy)
	for _, a := range []*structs.Allocation{idle, busy} {
		waitFor(t, "allocation running", func() bool {
			got := fs.alloc(a.ID)
			return got != nil && got.ClientStatus == structs.AllocClientStatusRunning
		})
	}

	var h *structs.GPUHistoryResponse
	waitFor(t, "the idle allocation flagged", func() bool {
		var err error
		h, err = c.AllocGPUHistory(idle.ID, 0)
		return err == nil && h.Idle
	})
	if len(h.GPUs) != 1 || h.GPUs[0].ID != gpus[0] || !h.GPUs[0].Simulated || len(h.IdleGPUs) != 1 || h.IdleSince == 0 {
		t.Errorf("idle allocation: got %d GPUs, idle GPUs %v, since %d; want its simulated GPU %s", len(h.GPUs), h.IdleGPUs, h.IdleSince, gpus[0])
	}
	for _, s := range h.GPUs[0].Samples[len(h.GPUs[0].Samples)-3:] {
		if s.GPUUtilPercent != 0 {
			t.Errorf("idle allocation's GPU: sample %.1f%%, want 0", s.GPUUtilPercent)
		}
	}

	bh, err := c.AllocGPUHistory(busy.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if bh.Idle || len(bh.GPUs) != 1 || bh.GPUs[0].ID != gpus[1] {
		t.Errorf("busy allocation: got idle %v, GPUs %+v", bh.Idle, bh.GPUs)
	}
	last := bh.GPUs[0].Samples[len(bh.GPUs[0].Samples)-1]
	if last.GPUUtilPercent < 50 {
		t.Errorf("busy allocation's GPU: last sample %.1f%%, want busy", last.GPUUtilPercent)
	}
	// The live stats agree with the history: the idle allocation's GPU
	// reads 0%.
	st, err := c.AllocStats(idle.ID)
	if err != nil || len(st.Devices) != 1 || st.Devices[0].GPUUtilPercent != 0 {
		t.Errorf("idle allocation's live stats: %v %+v, want 0%%", err, st)
	}

	// The node's history: every GPU, at most window/interval samples.
	waitFor(t, "a full window", func() bool {
		n := c.NodeGPUHistory(0)
		return len(n.GPUs) == 3 && len(n.GPUs[2].Samples) == 20
	})
	first := c.NodeGPUHistory(0).GPUs[0].Samples[0].Timestamp
	waitFor(t, "the ring to turn", func() bool {
		g := c.NodeGPUHistory(0).GPUs[0]
		if len(g.Samples) > 20 {
			t.Fatalf("node history: %d samples of GPU 0, want at most 20", len(g.Samples))
		}
		return g.Samples[0].Timestamp > first
	})
	n := c.NodeGPUHistory(250 * time.Millisecond)
	if n.NodeID != c.NodeID() || n.Interval != 100*time.Millisecond || n.Window != 2*time.Second || len(n.GPUs[0].Samples) > 3 || len(n.GPUs[0].Samples) == 0 {
		t.Errorf("node history, last 250ms: node %q, interval %v, window %v, %d samples; want 1 to 3", n.NodeID, n.Interval, n.Window, len(n.GPUs[0].Samples))
	}

	// Through the client operation, and for an allocation it does not run.
	var buf bytes.Buffer
	if err := structs.WriteStreamMsg(&buf, &structs.GPUHistoryRequest{AllocID: idle.ID}); err != nil {
		t.Fatal(err)
	}
	args, err := structs.ReadStreamMsgRaw(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.opAllocGPUHistory(context.Background(), args)
	if err != nil || !got.(*structs.GPUHistoryResponse).Idle {
		t.Errorf("op: got %v %+v, want the idle verdict", err, got)
	}
	if _, err := c.AllocGPUHistory("no-such-alloc", 0); !errors.Is(err, ErrUnknownAlloc) {
		t.Errorf("unknown allocation: got %v, want ErrUnknownAlloc", err)
	}
}

// TestGPUHistoryConfigRefused: a client refuses a history over the
// sample limit.
func TestGPUHistoryConfigRefused(t *testing.T) {
	cfg := testConfig(t)
	cfg.GPUHistory = gpuhistory.Config{Interval: time.Second, Window: 24 * time.Hour}
	if _, err := NewClient(cfg); err == nil {
		t.Fatal("NewClient took a 86,400-sample history")
	}
}
