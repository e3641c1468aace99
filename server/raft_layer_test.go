package server

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/droverhq/drover/structs"
)

// TestRaftLayer_CloseClosesConns: raft's transport leaves its pooled and
// accepted connections open when it shuts down, so the layer closes them;
// a connection raft closed itself is forgotten at once.
func TestRaftLayer_CloseClosesConns(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	layer := newRaftLayer(ln.Addr())

	// Outbound: the peer sees the raft byte, then EOF once the layer closes.
	out, err := layer.Dial(raft.ServerAddress(ln.Addr().String()), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	peerOut := <-accepted
	defer peerOut.Close()
	var b [1]byte
	if _, err := io.ReadFull(peerOut, b[:]); err != nil || b[0] != structs.RPCTypeRaft {
		t.Fatalf("first byte = %v, %v; want the raft type", b[0], err)
	}

	// Inbound: handed off and accepted by raft.
	inLocal, inPeer := net.Pipe()
	defer inPeer.Close()
	go layer.Handoff(inLocal)
	in, err := layer.Accept()
	if err != nil {
		t.Fatal(err)
	}

	// A connection raft closes itself leaves the layer's set.
	extra, err := layer.Dial(raft.ServerAddress(ln.Addr().String()), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	(<-accepted).Close()
	_ = extra.Close()
	layer.mu.Lock()
	tracked := len(layer.conns)
	layer.mu.Unlock()
	if tracked != 2 {
		t.Errorf("layer tracks %d connections, want 2 (the closed one forgotten)", tracked)
	}

	_ = layer.Close()
	_ = peerOut.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := peerOut.Read(b[:]); !errors.Is(err, io.EOF) {
		t.Errorf("outbound peer read after Close = %v, want EOF", err)
	}
	_ = inPeer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := inPeer.Read(b[:]); !errors.Is(err, io.EOF) {
		t.Errorf("inbound peer read after Close = %v, want EOF", err)
	}
	if _, err := in.Write([]byte{1}); err == nil {
		t.Error("write on an accepted connection after Close succeeded")
	}
	if _, err := out.Write([]byte{1}); err == nil {
		t.Error("write on a dialed connection after Close succeeded")
	}

	// After Close nothing new is kept open.
	if _, err := layer.Dial(raft.ServerAddress(ln.Addr().String()), time.Second); err == nil {
		t.Error("Dial after Close succeeded")
	}
	late, latePeer := net.Pipe()
	defer latePeer.Close()
	layer.Handoff(late)
	_ = latePeer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := latePeer.Read(b[:]); !errors.Is(err, io.EOF) {
		t.Errorf("connection handed off after Close: read = %v, want EOF", err)
	}
}
