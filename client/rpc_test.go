package client

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

func TestRPCPoolErrors(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	p := newRPCPool([]string{srv.addr()}, nil)
	defer p.close()
	ctx := context.Background()

	// A server-side error is returned as is and keeps the connection.
	var resp structs.NodeUpdateResponse
	err := p.call(ctx, structs.RPCNodeUpdateStatus, &structs.NodeUpdateStatusRequest{NodeID: "nope"}, &resp)
	if err == nil || !strings.Contains(err.Error(), "unknown node") {
		t.Fatalf("UpdateStatus of an unknown node = %v, want an unknown node error", err)
	}
	p.mu.Lock()
	kept := p.conn != nil
	p.mu.Unlock()
	if !kept {
		t.Error("a server error dropped the connection")
	}

	// A call abandoned by its context returns the context's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	var allocs structs.NodeAllocsResponse
	err = p.call(cctx, structs.RPCNodeGetAllocs, &structs.NodeSpecificRequest{NodeID: "n", QueryOptions: structs.QueryOptions{MinQueryIndex: 1 << 40, MaxQueryTime: time.Second}}, &allocs)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call = %v, want context.Canceled", err)
	}

	// After close, calls are refused.
	p.close()
	if err := p.call(ctx, structs.RPCNodeUpdateStatus, &structs.NodeUpdateStatusRequest{}, &resp); !errors.Is(err, structs.ErrShuttingDown) {
		t.Errorf("call after close = %v, want ErrShuttingDown", err)
	}
}

func TestRPCPoolNoServerReachable(t *testing.T) {
	down := newFakeServer(t, time.Second)
	addr := down.addr()
	down.close()
	p := newRPCPool([]string{addr}, nil)
	defer p.close()
	var resp structs.NodeUpdateResponse
	err := p.call(context.Background(), structs.RPCNodeRegister, &structs.NodeRegisterRequest{}, &resp)
	if err == nil || !strings.Contains(err.Error(), "no server reachable") {
		t.Errorf("call = %v, want no server reachable", err)
	}
}
