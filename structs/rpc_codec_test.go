package structs

import (
	"errors"
	"net"
	"net/rpc"
	"testing"
)

// TestClosedCodecFailsReads guards the go-msgpack workaround: after Close,
// reads must fail, or net/rpc's reader goroutine spins forever.
func TestClosedCodecFailsReads(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	cc := NewRPCClientCodec(a)
	if err := cc.Close(); !errors.Is(err, ErrRPCConnClosed) {
		t.Errorf("client Close() = %v, want ErrRPCConnClosed", err)
	}
	var resp rpc.Response
	if err := cc.ReadResponseHeader(&resp); err == nil {
		t.Error("ReadResponseHeader after Close returned nil; net/rpc would spin")
	}

	c, d := net.Pipe()
	defer d.Close()
	sc := NewRPCServerCodec(c)
	if err := sc.Close(); !errors.Is(err, ErrRPCConnClosed) {
		t.Errorf("server Close() = %v, want ErrRPCConnClosed", err)
	}
	var req rpc.Request
	if err := sc.ReadRequestHeader(&req); err == nil {
		t.Error("ReadRequestHeader after Close returned nil; net/rpc would spin")
	}
}
