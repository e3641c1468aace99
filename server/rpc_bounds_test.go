package server

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/rpc"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/droverhq/drover/structs"
)

// msgpackMap encodes a one-key map header and key; the caller appends the
// value.
func msgpackMap(key string) []byte {
	return append([]byte{0x81, 0xa0 | byte(len(key))}, key...)
}

// deepJobRegister is a Job.Register body whose first task's config holds
// depth nested arrays.
func deepJobRegister(depth int) []byte {
	var b []byte
	b = append(b, msgpackMap("Job")...)
	b = append(b, msgpackMap("TaskGroups")...)
	b = append(b, 0x91)
	b = append(b, msgpackMap("Tasks")...)
	b = append(b, 0x91)
	b = append(b, msgpackMap("Config")...)
	b = append(b, msgpackMap("a")...)
	b = append(b, bytes.Repeat([]byte{0x91}, depth)...)
	return append(b, 0xc0)
}

// hugeArrayJobRegister is a Job.Register body whose task groups declare
// 2^31-1 elements and give one byte that is no msgpack value.
func hugeArrayJobRegister() []byte {
	b := msgpackMap("Job")
	b = append(b, msgpackMap("TaskGroups")...)
	return append(b, 0xdd, 0x7f, 0xff, 0xff, 0xff, 0xc1)
}

// sendRaw writes a net/rpc call of method with a raw msgpack body on a
// new connection to the RPC port, reads the reply's header, and checks
// the server closes the connection after it. It returns the reply's
// error.
func sendRaw(t *testing.T, addr net.Addr, method string, body []byte) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	var msg bytes.Buffer
	msg.WriteByte(structs.RPCTypeRPC)
	if err := codec.NewEncoder(&msg, structs.MsgpackHandle).Encode(&rpc.Request{ServiceMethod: method, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	msg.Write(body)
	if _, err := conn.Write(msg.Bytes()); err != nil {
		t.Fatalf("write: %v", err)
	}
	dec := codec.NewDecoder(conn, structs.MsgpackHandle)
	var resp rpc.Response
	if err := dec.Decode(&resp); err != nil {
		t.Fatalf("read reply header: %v", err)
	}
	var discard struct{}
	_ = dec.Decode(&discard)
	// Closed: EOF, or a reset where the server left our bytes unread.
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("after the error reply: read %v, want the connection closed", err)
	}
	return resp.Error
}

// TestRPCDecodeBounds: a peer that has not authenticated sends what
// would make the decoder recurse or allocate without bound; it gets an
// error reply, its connection is closed, and the server goes on serving.
func TestRPCDecodeBounds(t *testing.T) {
	s := startServer(t, testConfig(t))
	addr := s.listener.Addr()
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"100000-deep config", deepJobRegister(100_000), "maximum decoding depth exceeded"},
		{"2^31-element array", hugeArrayJobRegister(), "decode request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sendRaw(t, addr, structs.RPCJobRegister, tt.body)
			if !strings.Contains(got, tt.want) {
				t.Fatalf("reply error %q, want it to contain %q", got, tt.want)
			}
			c := dialRPC(t, addr)
			if err := c.Call(structs.RPCStatusPing, &struct{}{}, &struct{}{}); err != nil {
				t.Fatalf("next client's ping: %v", err)
			}
		})
	}
}

// TestRaftPortDecodeBounds: the Raft transport decodes with its own
// handle (hashicorp/raft's, at the codec's defaults). 100000 nested
// arrays and a 2^31-element array on the Raft port end that connection;
// the server still leads and serves RPC.
func TestRaftPortDecodeBounds(t *testing.T) {
	s := startServer(t, testConfig(t))
	addr := s.listener.Addr()
	for name, body := range map[string][]byte{
		"100000-deep":        bytes.Repeat([]byte{0x91}, 100_000),
		"2^31-element array": {0x81, 0xa7, 'E', 'n', 't', 'r', 'i', 'e', 's', 0xdd, 0x7f, 0xff, 0xff, 0xff, 0xc1},
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
			// The connection type, then raft's own: 0 is AppendEntries.
			if _, err := conn.Write(append([]byte{structs.RPCTypeRaft, 0}, body...)); err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, conn); err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("raft connection: %v, want closed by the server", err)
			}
			if !s.IsLeader() {
				t.Fatal("server lost leadership")
			}
			c := dialRPC(t, addr)
			if err := c.Call(structs.RPCStatusPing, &struct{}{}, &struct{}{}); err != nil {
				t.Fatalf("ping after: %v", err)
			}
		})
	}
}
