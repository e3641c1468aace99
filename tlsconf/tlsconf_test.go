package tlsconf

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pki is a CA in a temp dir that issues certificates into it.
type pki struct {
	t              *testing.T
	dir            string
	caFile         string
	caCert, caKey  []byte
	domain, region string
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	cert, key, err := CreateCA(CAOptions{Domain: "drover", Days: 30})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := &pki{t: t, dir: dir, caCert: cert, caKey: key, domain: "drover", region: "global"}
	p.caFile = p.write(name+"-ca.pem", cert)
	return p
}

func (p *pki) write(name string, data []byte) string {
	p.t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// issue creates a certificate for role (domain overrides p.domain when
// set) and returns its cert and key files.
func (p *pki) issue(name string, role Role, domain string) (certFile, keyFile string) {
	p.t.Helper()
	if domain == "" {
		domain = p.domain
	}
	cert, key, err := CreateCert(CertOptions{Role: role, Region: p.region, Domain: domain, Days: 10, CACert: p.caCert, CAKey: p.caKey})
	if err != nil {
		p.t.Fatal(err)
	}
	return p.write(name+".pem", cert), p.write(name+"-key.pem", key)
}

// configurator returns a Configurator with rpc TLS for the files.
func (p *pki) configurator(certFile, keyFile string, verifyHostname bool) *Configurator {
	p.t.Helper()
	c, err := New(Config{RPC: true, HTTP: true, CAFile: p.caFile, CertFile: certFile, KeyFile: keyFile, VerifyServerHostname: verifyHostname, Region: p.region})
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

// serveOnce accepts one connection on a loopback listener and runs the
// server side's handshake; the result arrives on the channel.
func serveOnce(t *testing.T, srv *Configurator) (string, <-chan handshakeResult) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out := make(chan handshakeResult, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			out <- handshakeResult{err: err}
			return
		}
		tc, err := srv.Server(context.Background(), conn, 5*time.Second)
		if err != nil {
			out <- handshakeResult{err: err}
			return
		}
		// Answer one byte so the dialer knows the handshake stuck on
		// both sides (TLS 1.3 clients finish before the server checks).
		_, _ = tc.Write([]byte{1})
		out <- handshakeResult{state: tc.ConnectionState()}
		tc.Close()
	}()
	return ln.Addr().String(), out
}

type handshakeResult struct {
	state tls.ConnectionState
	err   error
}

// dial runs the dialing side against addr and reads the server's byte.
func dial(t *testing.T, cli *Configurator, addr string) error {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := cli.Client(context.Background(), conn, 5*time.Second)
	if err != nil {
		return err
	}
	defer tc.Close()
	_ = tc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadFull(tc, make([]byte, 1))
	return err
}

func TestHandshakeMatrix(t *testing.T) {
	ca := newPKI(t, "drover-agent")
	other := newPKI(t, "other")
	serverCert, serverKey := ca.issue("global-server-drover", RoleServer, "")
	clientCert, clientKey := ca.issue("global-client-drover", RoleClient, "")
	nomadCert, nomadKey := ca.issue("global-server-nomad", RoleServer, "nomad")
	otherServer, otherServerKey := other.issue("global-server-drover", RoleServer, "")
	otherClient, otherClientKey := other.issue("global-client-drover", RoleClient, "")

	tests := []struct {
		name string
		// the listening side's and the dialing side's configurators
		srv, cli *Configurator
		wantOK   bool
		wantErr  string // in the dialer's or the listener's error
	}{
		{name: "client to server, mutual TLS", srv: ca.configurator(serverCert, serverKey, true), cli: ca.configurator(clientCert, clientKey, true), wantOK: true},
		{name: "server to server", srv: ca.configurator(serverCert, serverKey, true), cli: ca.configurator(serverCert, serverKey, true), wantOK: true},
		{name: "nomad-named server cert", srv: ca.configurator(nomadCert, nomadKey, true), cli: ca.configurator(clientCert, clientKey, true), wantOK: true},
		{name: "client cert from another CA", srv: ca.configurator(serverCert, serverKey, true), cli: other.configurator(otherClient, otherClientKey, true), wantErr: "certificate"},
		{name: "server cert from another CA", srv: other.configurator(otherServer, otherServerKey, true), cli: ca.configurator(clientCert, clientKey, true), wantErr: "unknown authority"},
		{name: "client cert acting as server", srv: ca.configurator(clientCert, clientKey, true), cli: ca.configurator(serverCert, serverKey, true), wantErr: "not a server"},
		{name: "client cert as server without verify_server_hostname", srv: ca.configurator(clientCert, clientKey, false), cli: ca.configurator(serverCert, serverKey, false), wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, res := serveOnce(t, tt.srv)
			dialErr := dial(t, tt.cli, addr)
			got := <-res
			if tt.wantOK {
				if dialErr != nil || got.err != nil {
					t.Fatalf("handshake: dialer %v, listener %v; want both ok", dialErr, got.err)
				}
				return
			}
			if dialErr == nil && got.err == nil {
				t.Fatalf("handshake succeeded; want an error with %q", tt.wantErr)
			}
			if !strings.Contains(errString(dialErr)+" "+errString(got.err), tt.wantErr) {
				t.Errorf("errors: dialer %v, listener %v; want %q", dialErr, got.err, tt.wantErr)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestPlaintextRefused: a peer that speaks plaintext, or TLS without a
// client certificate, never gets past the server's handshake.
func TestPlaintextRefused(t *testing.T) {
	ca := newPKI(t, "drover-agent")
	serverCert, serverKey := ca.issue("global-server-drover", RoleServer, "")
	srv := ca.configurator(serverCert, serverKey, true)

	t.Run("plaintext bytes", func(t *testing.T) {
		addr, res := serveOnce(t, srv)
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write([]byte{0x01, 'h', 'i', '\n', 0, 0, 0, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
		if got := <-res; got.err == nil {
			t.Fatal("server accepted a plaintext connection")
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(conn); err != nil && !isClosed(err) {
			t.Fatalf("read after refusal: %v; want EOF or reset", err)
		}
	})
	t.Run("TLS without a client certificate", func(t *testing.T) {
		addr, res := serveOnce(t, srv)
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = io.ReadFull(conn, make([]byte, 1))
			conn.Close()
		}
		got := <-res
		if err == nil || got.err == nil || !strings.Contains(got.err.Error(), "certificate") {
			t.Fatalf("dialer %v, listener %v; want both to fail for the missing certificate", err, got.err)
		}
	})
	t.Run("TLS 1.1", func(t *testing.T) {
		addr, res := serveOnce(t, srv)
		cert := srv.Certificate()
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11, Certificates: []tls.Certificate{*cert}})
		if err == nil {
			conn.Close()
		}
		if got := <-res; err == nil || got.err == nil {
			t.Fatalf("dialer %v, listener %v; want TLS 1.1 refused", err, got.err)
		}
	})
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "reset")
}

// TestCheckServerPeer: the listening side's check for Raft and
// server-to-server connections.
func TestCheckServerPeer(t *testing.T) {
	ca := newPKI(t, "drover-agent")
	serverCert, serverKey := ca.issue("global-server-drover", RoleServer, "")
	clientCert, clientKey := ca.issue("global-client-drover", RoleClient, "")
	srv := ca.configurator(serverCert, serverKey, true)

	for _, tt := range []struct {
		name       string
		cert, key  string
		wantServer bool
	}{
		{name: "server cert", cert: serverCert, key: serverKey, wantServer: true},
		{name: "client cert", cert: clientCert, key: clientKey, wantServer: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr, res := serveOnce(t, srv)
			if err := dial(t, ca.configurator(tt.cert, tt.key, true), addr); err != nil {
				t.Fatal(err)
			}
			got := <-res
			if got.err != nil {
				t.Fatal(got.err)
			}
			err := srv.CheckServerPeer(got.state)
			if (err == nil) != tt.wantServer || (err != nil && !errors.Is(err, ErrNotServer)) {
				t.Errorf("CheckServerPeer = %v; want server %v", err, tt.wantServer)
			}
		})
	}
}

// TestReload: handshakes after Reload present the new certificate; a
// broken file leaves the old one in use.
func TestReload(t *testing.T) {
	ca := newPKI(t, "drover-agent")
	certFile, keyFile := ca.issue("global-server-drover", RoleServer, "")
	clientCert, clientKey := ca.issue("global-client-drover", RoleClient, "")
	srv := ca.configurator(certFile, keyFile, true)
	cli := ca.configurator(clientCert, clientKey, true)

	serialSeen := func() string {
		t.Helper()
		addr, res := serveOnce(t, srv)
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		tc, err := cli.Client(context.Background(), conn, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		if got := <-res; got.err != nil {
			t.Fatal(got.err)
		}
		return tc.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serialSeen()

	// New files at the same paths.
	newCert, newKey, err := CreateCert(CertOptions{Role: RoleServer, Region: "global", Domain: "drover", Days: 10, CACert: ca.caCert, CAKey: ca.caKey})
	if err != nil {
		t.Fatal(err)
	}
	ca.write("global-server-drover.pem", newCert)
	ca.write("global-server-drover-key.pem", newKey)
	if err := srv.Reload(); err != nil {
		t.Fatal(err)
	}
	after := serialSeen()
	if after == before {
		t.Fatalf("serial after reload = %s, the old one", after)
	}
	if want := srv.Certificate().Leaf.SerialNumber.String(); after != want {
		t.Fatalf("serial after reload = %s; want the new file's %s", after, want)
	}

	ca.write("global-server-drover-key.pem", []byte("not a key"))
	if err := srv.Reload(); err == nil || !strings.Contains(err.Error(), "key_file") {
		t.Fatalf("Reload with a broken key = %v; want an error naming key_file", err)
	}
	if got := serialSeen(); got != after {
		t.Fatalf("serial after a failed reload = %s; want the last good %s", got, after)
	}
}

func TestHTTPSClientVerification(t *testing.T) {
	ca := newPKI(t, "drover-agent")
	serverCert, serverKey := ca.issue("global-server-drover", RoleServer, "")
	cliCert, cliKey := ca.issue("global-cli-drover", RoleCLI, "")
	pair, err := tls.LoadX509KeyPair(cliCert, cliKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		verify     bool
		clientCert bool
		wantOK     bool
	}{
		{name: "no client verification", verify: false, clientCert: false, wantOK: true},
		{name: "verify, cli cert", verify: true, clientCert: true, wantOK: true},
		{name: "verify, no cert", verify: true, clientCert: false, wantOK: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Config{HTTP: true, CAFile: ca.caFile, CertFile: serverCert, KeyFile: serverKey, VerifyHTTPSClient: tt.verify})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := tls.Listen("tcp", "127.0.0.1:0", c.IncomingHTTP())
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = conn.Write([]byte{1})
				conn.Close()
			}()
			roots := x509PoolFromFile(t, ca.caFile)
			cfg := &tls.Config{RootCAs: roots, ServerName: "localhost"}
			if tt.clientCert {
				cfg.Certificates = []tls.Certificate{pair}
			}
			conn, err := tls.Dial("tcp", ln.Addr().String(), cfg)
			if err == nil {
				_, err = io.ReadFull(conn, make([]byte, 1))
				if err == nil && conn.ConnectionState().NegotiatedProtocol != "" && conn.ConnectionState().NegotiatedProtocol != "http/1.1" {
					t.Errorf("ALPN = %q; want http/1.1", conn.ConnectionState().NegotiatedProtocol)
				}
				conn.Close()
			}
			if (err == nil) != tt.wantOK {
				t.Fatalf("dial: %v; want ok %v", err, tt.wantOK)
			}
		})
	}
}

func TestNewErrorsNameTheField(t *testing.T) {
	ca := newPKI(t, "drover-agent")
	other := newPKI(t, "other")
	serverCert, serverKey := ca.issue("global-server-drover", RoleServer, "")
	_, otherKey := ca.issue("another", RoleServer, "")
	otherCert, otherCertKey := other.issue("other-server", RoleServer, "")
	missing := filepath.Join(t.TempDir(), "nope.pem")
	garbage := ca.write("garbage.pem", []byte("hello"))

	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "missing ca", cfg: Config{RPC: true, CAFile: missing, CertFile: serverCert, KeyFile: serverKey}, wantErr: `ca_file "` + missing + `": no such file`},
		{name: "ca not PEM", cfg: Config{RPC: true, CAFile: garbage, CertFile: serverCert, KeyFile: serverKey}, wantErr: `ca_file "` + garbage + `": no PEM certificate`},
		{name: "cert not PEM", cfg: Config{RPC: true, CAFile: ca.caFile, CertFile: garbage, KeyFile: serverKey}, wantErr: `cert_file "` + garbage},
		{name: "missing key", cfg: Config{RPC: true, CAFile: ca.caFile, CertFile: serverCert, KeyFile: missing}, wantErr: `key_file "` + missing},
		{name: "key of another cert", cfg: Config{RPC: true, CAFile: ca.caFile, CertFile: serverCert, KeyFile: otherKey}, wantErr: "does not match"},
		{name: "cert of another CA", cfg: Config{RPC: true, CAFile: ca.caFile, CertFile: otherCert, KeyFile: otherCertKey}, wantErr: "is not signed by ca_file"},
		{name: "no ca with rpc", cfg: Config{RPC: true, CertFile: serverCert, KeyFile: serverKey}, wantErr: "ca_file is required"},
		{name: "no cert", cfg: Config{HTTP: true}, wantErr: "cert_file is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New = %v; want an error with %q", err, tt.wantErr)
			}
		})
	}
}
