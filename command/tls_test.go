package command

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/droverhq/drover/command/agent"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(buf)
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// makePKI runs `tls ca create` and `tls cert create` for every role in
// dir (the working directory during the call).
func makePKI(t *testing.T, dir string) {
	t.Helper()
	t.Chdir(dir)
	for _, args := range [][]string{
		{"tls", "ca", "create", "-common-name", "Test CA"},
		{"tls", "cert", "create", "-server", "-additional-dnsname", "drover.example", "-additional-ipaddress", "10.1.2.3"},
		{"tls", "cert", "create", "-client"},
		{"tls", "cert", "create", "-cli"},
	} {
		if code, out, errOut := run(t, "", args...); code != 0 {
			t.Fatalf("drover %v = %d: %s%s", args, code, out, errOut)
		}
	}
}

func TestTLSCreate(t *testing.T) {
	dir := t.TempDir()
	makePKI(t, dir)

	ca := readCert(t, "drover-agent-ca.pem")
	if !ca.IsCA || ca.Subject.CommonName != "Test CA" {
		t.Errorf("CA: IsCA %v, CN %q", ca.IsCA, ca.Subject.CommonName)
	}
	if days := ca.NotAfter.Sub(ca.NotBefore).Hours() / 24; days < 1824 || days > 1826 {
		t.Errorf("CA valid for %.1f days; want 1825", days)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	tests := []struct {
		file    string
		wantDNS []string
		wantIPs []string
	}{
		{file: "global-server-drover", wantDNS: []string{"server.global.drover", "localhost", "drover.example"}, wantIPs: []string{"127.0.0.1", "10.1.2.3"}},
		{file: "global-client-drover", wantDNS: []string{"client.global.drover", "localhost"}, wantIPs: []string{"127.0.0.1"}},
		{file: "global-cli-drover", wantDNS: []string{"cli.global.drover", "localhost"}, wantIPs: nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c := readCert(t, tt.file+".pem")
			var ips []string
			for _, ip := range c.IPAddresses {
				ips = append(ips, ip.String())
			}
			if !slices.Equal(c.DNSNames, tt.wantDNS) || !slices.Equal(ips, tt.wantIPs) {
				t.Errorf("DNS %v, IPs %v; want %v, %v", c.DNSNames, ips, tt.wantDNS, tt.wantIPs)
			}
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("verify against the CA: %v", err)
			}
			if m := fileMode(t, tt.file+"-key.pem"); m != 0o600 {
				t.Errorf("key mode = %v; want 0600", m)
			}
			if _, err := tls.LoadX509KeyPair(tt.file+".pem", tt.file+"-key.pem"); err != nil {
				t.Errorf("key pair: %v", err)
			}
		})
	}
	if m := fileMode(t, "drover-agent-ca-key.pem"); m != 0o600 {
		t.Errorf("CA key mode = %v; want 0600", m)
	}

	before, _ := os.ReadFile("global-server-drover.pem")
	refusals := []struct {
		name string
		args []string
		want string
	}{
		{name: "CA exists", args: []string{"tls", "ca", "create"}, want: "drover-agent-ca.pem already exists"},
		{name: "cert exists", args: []string{"tls", "cert", "create", "-server"}, want: "global-server-drover.pem already exists"},
		{name: "no role", args: []string{"tls", "cert", "create"}, want: "exactly one of -server, -client or -cli"},
		{name: "two roles", args: []string{"tls", "cert", "create", "-server", "-client", "-region", "eu"}, want: "exactly one"},
		{name: "bad ip", args: []string{"tls", "cert", "create", "-server", "-region", "eu", "-additional-ipaddress", "nope"}, want: `"nope" is not an IP address`},
		{name: "missing CA", args: []string{"tls", "cert", "create", "-server", "-region", "eu", "-ca", "other-ca.pem"}, want: "-ca"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := run(t, "", tt.args...)
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Errorf("code %d, stderr %q; want a failure with %q", code, errOut, tt.want)
			}
		})
	}
	if after, _ := os.ReadFile("global-server-drover.pem"); string(after) != string(before) {
		t.Error("a refused run changed global-server-drover.pem")
	}
	if _, err := os.Stat("eu-server-drover.pem"); err == nil {
		t.Error("a refused run wrote eu-server-drover.pem")
	}
}

// TestTLSAndTokenFlags: -ca-cert, -client-cert, -client-key and -token
// reach an HTTPS agent that verifies clients, and win over the
// environment.
func TestTLSAndTokenFlags(t *testing.T) {
	dir := t.TempDir()
	makePKI(t, dir)
	path := func(name string) string { return filepath.Join(dir, name) }

	var mu sync.Mutex
	var tokens []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tokens = append(tokens, r.Header.Get("X-Nomad-Token"))
		mu.Unlock()
		fmt.Fprint(w, `{"Messages": {}, "Keys": {"a2V5": 1}, "NumNodes": 1}`)
	}))
	pair, err := tls.LoadX509KeyPair(path("global-server-drover.pem"), path("global-server-drover-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, path("drover-agent-ca.pem")))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: roots}
	srv.StartTLS()
	defer srv.Close()

	t.Setenv("DROVER_CACERT", path("missing-ca.pem"))
	t.Setenv("DROVER_TOKEN", "from-env")
	tlsFlags := []string{"-address", srv.URL, "-ca-cert", path("drover-agent-ca.pem"),
		"-client-cert", path("global-cli-drover.pem"), "-client-key", path("global-cli-drover-key.pem")}

	code, out, errOut := run(t, "", append([]string{"operator", "gossip", "keyring", "-list", "-token", "from-flag"}, tlsFlags...)...)
	if code != 0 || !strings.Contains(out, "a2V5") {
		t.Fatalf("keyring -list over HTTPS = %d %q %q", code, out, errOut)
	}
	if code, _, _ := run(t, "", "operator", "gossip", "keyring", "-list", "-address", srv.URL, "-ca-cert", path("drover-agent-ca.pem")); code == 0 {
		t.Error("a run without a client certificate succeeded")
	}
	code, _, errOut2 := run(t, "", "operator", "gossip", "keyring", "-list", "-address", srv.URL)
	if code == 0 || !strings.Contains(errOut2, "missing-ca.pem") {
		t.Errorf("a run with the environment's missing CA = %d %q; want it to name the file", code, errOut2)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tokens) != 1 || tokens[0] != "from-flag" {
		t.Errorf("tokens = %q; want the flag's, once", tokens)
	}
}

// TestOperatorGossipKeyring rotates the gossip key of a real server
// agent through the CLI.
func TestOperatorGossipKeyring(t *testing.T) {
	code, first, _ := run(t, "", "operator", "gossip", "keyring", "-generate")
	first = strings.TrimSpace(first)
	if raw, err := base64.StdEncoding.DecodeString(first); code != 0 || err != nil || len(raw) != 32 {
		t.Fatalf("-generate = %d %q (%v); want a 32-byte base64 key", code, first, err)
	}

	cfg := agent.DefaultConfig()
	cfg.Name = "srv-1"
	cfg.BindAddr = "127.0.0.1"
	cfg.Ports = &agent.PortsConfig{}
	cfg.DataDir = t.TempDir()
	cfg.LogLevel = "WARN"
	cfg.Server.Enabled = true
	cfg.Server.BootstrapExpect = 1
	cfg.Server.Encrypt = first
	a, err := agent.NewAgent(cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown() })
	addr := "http://" + a.HTTPAddr()

	_, second, _ := run(t, "", "operator", "gossip", "keyring", "-generate")
	second = strings.TrimSpace(second)
	steps := []struct {
		args     []string
		wantCode int
		wantOut  string
	}{
		{args: []string{"-list"}, wantOut: first + "  1/1"},
		{args: []string{"-install", second}, wantOut: "Done: 1 servers"},
		{args: []string{"-use", second}, wantOut: "Done"},
		{args: []string{"-remove", second}, wantCode: 1, wantOut: "Error removing the key"},
		{args: []string{"-remove", first}, wantOut: "Done"},
		{args: []string{"-list"}, wantOut: second + "  1/1"},
		{args: []string{"-install", "c2hvcnQ="}, wantCode: 1, wantOut: "5 bytes"},
		{args: []string{"-list", "-use", first}, wantCode: 1, wantOut: "exactly one"},
	}
	for _, s := range steps {
		code, out, errOut := run(t, addr, append([]string{"operator", "gossip", "keyring"}, s.args...)...)
		if code != s.wantCode || !strings.Contains(out+errOut, s.wantOut) {
			t.Fatalf("keyring %v = %d %q %q; want %d with %q", s.args, code, out, errOut, s.wantCode, s.wantOut)
		}
	}
}
