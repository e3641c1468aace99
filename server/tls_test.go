package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/rpc"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"

	"github.com/droverhq/drover/structs"
	"github.com/droverhq/drover/tlsconf"
)

// testPKI is a CA with a server and a client certificate, in a temp dir.
type testPKI struct {
	caFile                string
	serverCert, serverKey string
	clientCert, clientKey string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	caCert, caKey, err := tlsconf.CreateCA(tlsconf.CAOptions{Days: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := testPKI{caFile: write("ca.pem", caCert)}
	for _, role := range []tlsconf.Role{tlsconf.RoleServer, tlsconf.RoleClient} {
		cert, key, err := tlsconf.CreateCert(tlsconf.CertOptions{Role: role, Region: "global", Domain: "drover", Days: 1, CACert: caCert, CAKey: caKey})
		if err != nil {
			t.Fatal(err)
		}
		c, k := write(string(role)+".pem", cert), write(string(role)+"-key.pem", key)
		if role == tlsconf.RoleServer {
			p.serverCert, p.serverKey = c, k
		} else {
			p.clientCert, p.clientKey = c, k
		}
	}
	return p
}

func (p testPKI) configurator(t *testing.T, cert, key string) *tlsconf.Configurator {
	t.Helper()
	c, err := tlsconf.New(tlsconf.Config{RPC: true, CAFile: p.caFile, CertFile: cert, KeyFile: key, VerifyServerHostname: true, Region: "global"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func gossipKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

// TestTLSCluster: three servers with rpc TLS (verify_server_hostname)
// and gossip encryption form a cluster (serf, bootstrap checks and Raft
// over TLS) and forward writes; the RPC port refuses plaintext, and a
// client certificate gets a node session but no Raft connection; the
// gossip keyring can be rotated on every server at once.
func TestTLSCluster(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	serverTLS := pki.configurator(t, pki.serverCert, pki.serverKey)
	firstKey := gossipKey(t)
	raw, err := DecodeGossipKey(firstKey)
	if err != nil {
		t.Fatal(err)
	}
	c := newTestCluster(t, 3, withServerConfig(func(i int, cfg *Config) {
		cfg.TLS = serverTLS
		cfg.EncryptKey = raw
	}))
	leader := c.WaitForLeader(clusterFormTimeout)

	// A write through a follower is forwarded to the leader over TLS.
	follower := c.Followers()[0]
	job := gpuJob("tls-job", structs.JobTypeBatch, 1, 1)
	registerJob(t, follower, job)
	if got, _ := leader.State().JobByID(nil, structs.DefaultNamespace, job.ID); got == nil {
		t.Fatal("the job registered through a follower is not in the leader's state")
	}

	addr := leader.RPCAddr().String()
	t.Run("plaintext refused", func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write([]byte{structs.RPCTypeRPC}); err != nil {
			t.Fatal(err)
		}
		client := rpc.NewClientWithCodec(structs.NewRPCClientCodec(conn))
		defer client.Close()
		var reply struct{}
		if err := client.Call("Status.Ping", &struct{}{}, &reply); err == nil {
			t.Fatal("a plaintext call was answered")
		}
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Fatal("the plaintext connection is still open")
		}
	})

	clientTLS := pki.configurator(t, pki.clientCert, pki.clientKey)
	dialTLS := func(t *testing.T, kind byte) net.Conn {
		t.Helper()
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte{structs.RPCTypeTLS}); err != nil {
			t.Fatal(err)
		}
		tc, err := clientTLS.Client(context.Background(), conn, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tc.Close() })
		if _, err := tc.Write([]byte{kind}); err != nil {
			t.Fatal(err)
		}
		return tc
	}
	t.Run("client cert refused for raft", func(t *testing.T) {
		conn := dialTLS(t, structs.RPCTypeRaft)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(conn); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("read: %v; want the server to close the connection", err)
		}
	})
	t.Run("client cert gets a node session", func(t *testing.T) {
		conn := dialTLS(t, structs.RPCTypeNodeMultiplex)
		sess, err := yamux.Client(conn, yamuxConfig(hclog.NewNullLogger()))
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		stream, err := sess.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Write([]byte{structs.StreamTypeRPC}); err != nil {
			t.Fatal(err)
		}
		client := rpc.NewClientWithCodec(structs.NewRPCClientCodec(stream))
		defer client.Close()
		var reply struct{}
		if err := client.Call("Status.Ping", &struct{}{}, &reply); err != nil {
			t.Fatalf("Status.Ping on a node session: %v", err)
		}
	})

	t.Run("keyring rotation", func(t *testing.T) {
		keyring := func(method, key string) *structs.KeyringResponse {
			t.Helper()
			var resp structs.KeyringResponse
			if err := follower.RPC(method, &structs.KeyringRequest{Key: key}, &resp); err != nil {
				t.Fatalf("%s %s: %v", method, key, err)
			}
			return &resp
		}
		if got := keyring(structs.RPCKeyringList, ""); got.NumNodes != 3 || len(got.Keys) != 1 || got.Keys[firstKey] != 3 {
			t.Fatalf("list = %+v; want the first key on 3 servers", got)
		}
		second := gossipKey(t)
		keyring(structs.RPCKeyringInstall, second)
		keyring(structs.RPCKeyringUse, second)
		var resp structs.KeyringResponse
		err := follower.RPC(structs.RPCKeyringRemove, &structs.KeyringRequest{Key: second}, &resp)
		if structs.CodeOf(err) != structs.CodeBadRequest {
			t.Fatalf("removing the primary key: %v (code %v); want a bad request", err, structs.CodeOf(err))
		}
		keyring(structs.RPCKeyringRemove, firstKey)
		if got := keyring(structs.RPCKeyringList, ""); len(got.Keys) != 1 || got.Keys[second] != 3 {
			t.Fatalf("list after rotation = %+v; want only the second key, on 3 servers", got)
		}
		err = follower.RPC(structs.RPCKeyringInstall, &structs.KeyringRequest{Key: "c2hvcnQ="}, &resp)
		if structs.CodeOf(err) != structs.CodeBadRequest {
			t.Fatalf("installing a 5-byte key: %v; want a bad request", err)
		}
		// The keyring file is rewritten, for the next start.
		keys, err := readKeyringFile(filepath.Join(c.configs[c.Index(follower)].DataDir, serfKeyringFile))
		if err != nil || len(keys) != 1 || base64.StdEncoding.EncodeToString(keys[0]) != second {
			t.Fatalf("keyring file = %d keys, %v; want the second key alone", len(keys), err)
		}
	})
}

// TestKeyringWithoutEncryption: the keyring endpoint says encryption is
// off instead of asking the servers.
func TestKeyringWithoutEncryption(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	var resp structs.KeyringResponse
	err := s.RPC(structs.RPCKeyringList, &structs.KeyringRequest{}, &resp)
	if structs.CodeOf(err) != structs.CodeBadRequest {
		t.Fatalf("list without encryption: %v; want a bad request", err)
	}
}
