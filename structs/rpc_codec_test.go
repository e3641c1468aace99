package structs

import (
	"net"
	"net/rpc"
	"strings"
	"testing"
)

// TestRPCServerCodecBudget: requests under the budget are read one after
// another (it is refilled per request), a snapshot restore past it too
// (its own bound); any other over it fails with ErrRPCMessageTooLarge
// instead of being read whole.
func TestRPCServerCodecBudget(t *testing.T) {
	const budget = 64 << 10
	srvConn, cliConn := net.Pipe()
	defer srvConn.Close()
	server := newBudgetCodec(srvConn, budget)
	client := NewRPCClientCodec(cliConn)
	defer client.Close()

	type body struct{ S string }
	sizes := []int{budget / 2, budget / 2, 4 * budget, budget / 2, 4 * budget}
	methods := []string{"Test.Echo", "Test.Echo", RPCSnapshotRestore, "Test.Echo", "Test.Echo"}
	go func() {
		for i, n := range sizes {
			req := &rpc.Request{ServiceMethod: methods[i], Seq: uint64(i)}
			if err := client.WriteRequest(req, &body{S: strings.Repeat("x", n)}); err != nil {
				return // the server hung up on the big one
			}
		}
	}()
	for i, n := range sizes[:4] {
		var req rpc.Request
		if err := server.ReadRequestHeader(&req); err != nil {
			t.Fatalf("request %d header: %v", i, err)
		}
		var got body
		if err := server.ReadRequestBody(&got); err != nil || len(got.S) != n {
			t.Fatalf("request %d (%s, %d bytes): %d bytes read, err %v", i, methods[i], n, len(got.S), err)
		}
	}
	var req rpc.Request
	err := server.ReadRequestHeader(&req)
	if err == nil {
		var got body
		err = server.ReadRequestBody(&got)
	}
	if err == nil || !strings.Contains(err.Error(), ErrRPCMessageTooLarge.Error()) {
		t.Fatalf("request over the budget: %v, want %v", err, ErrRPCMessageTooLarge)
	}
	_ = server.Close()
}
