package server

import (
	"net"
	"net/rpc"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"

	"github.com/droverhq/drover/structs"
)

// dialNodeSession opens a node's session (structs.RPCTypeNodeMultiplex)
// to addr and one RPC stream on it, as a client agent does.
func dialNodeSession(t *testing.T, addr net.Addr) *rpc.Client {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte{structs.RPCTypeNodeMultiplex}); err != nil {
		t.Fatal(err)
	}
	sess, err := yamux.Client(conn, yamuxConfig(hclog.NewNullLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	stream, err := sess.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Write([]byte{structs.StreamTypeRPC}); err != nil {
		t.Fatal(err)
	}
	c := rpc.NewClientWithCodec(structs.NewRPCClientCodec(stream))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestRootKeyGet_NodeSessionRefused: a node's session (what a client
// agent, and so its HTTP API's forwarded calls, use) never gets a root
// key, even by its exact ID; a server's connection does (the control).
func TestRootKeyGet_NodeSessionRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	putVar(t, s, "", "app/db", structs.VariableItems{"pass": "s3cret"}, nil)
	meta, err := s.State().ActiveRootKeyMeta(nil)
	if err != nil || meta == nil {
		t.Fatalf("active root key: %v, %v", meta, err)
	}
	req := &structs.RootKeyGetRequest{KeyID: meta.KeyID}
	var got structs.RootKeyGetResponse
	err = dialNodeSession(t, s.RPCAddr()).Call(structs.RPCRootKeyGet, req, &got)
	if err == nil || got.Key != nil || !strings.Contains(err.Error(), "only servers may call it") {
		t.Errorf("RootKey.Get on a node session: key %v, %v; want refused", got.Key != nil, err)
	}
	var srv structs.RootKeyGetResponse
	if err := dialRPC(t, s.RPCAddr()).Call(structs.RPCRootKeyGet, req, &srv); err != nil || srv.Key == nil {
		t.Errorf("RootKey.Get on a server connection: %v, key %v; want the key", err, srv.Key != nil)
	}
}
