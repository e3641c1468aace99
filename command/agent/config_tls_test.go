package agent

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
	"github.com/droverhq/drover/tlsconf"
)

// agentPKI writes a CA and server, client and cli certificates into dir
// under `drover tls`'s file names.
type agentPKI struct {
	dir           string
	caCert, caKey []byte
}

func newAgentPKI(t *testing.T) *agentPKI {
	t.Helper()
	p := &agentPKI{dir: t.TempDir()}
	var err error
	if p.caCert, p.caKey, err = tlsconf.CreateCA(tlsconf.CAOptions{Days: 1}); err != nil {
		t.Fatal(err)
	}
	p.write(t, "drover-agent-ca.pem", p.caCert)
	for _, role := range []tlsconf.Role{tlsconf.RoleServer, tlsconf.RoleClient, tlsconf.RoleCLI} {
		p.issue(t, role)
	}
	return p
}

// issue (re)creates role's certificate and key.
func (p *agentPKI) issue(t *testing.T, role tlsconf.Role) {
	t.Helper()
	cert, key, err := tlsconf.CreateCert(tlsconf.CertOptions{Role: role, Region: "global", Domain: "drover", Days: 1, CACert: p.caCert, CAKey: p.caKey})
	if err != nil {
		t.Fatal(err)
	}
	p.write(t, "global-"+string(role)+"-drover.pem", cert)
	p.write(t, "global-"+string(role)+"-drover-key.pem", key)
}

func (p *agentPKI) write(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(p.dir, name), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (p *agentPKI) path(name string) string { return filepath.Join(p.dir, name) }

// block is the issue's tls block with this PKI's files.
func (p *agentPKI) block() string {
	return fmt.Sprintf(`
tls {
  http = true
  rpc  = true
  ca_file   = %q
  cert_file = %q
  key_file  = %q
  verify_server_hostname = true
  verify_https_client    = true
}
`, p.path("drover-agent-ca.pem"), p.path("global-server-drover.pem"), p.path("global-server-drover-key.pem"))
}

const testGossipKey = "cg8StVXbQJ0gPvMd9o7yrg3mKmsqTT/MGHTs8sGPByc="

func TestParseTLSConfig(t *testing.T) {
	p := newAgentPKI(t)
	src := strings.Replace(issueConfig, "bootstrap_expect = 1\n", "bootstrap_expect = 1\n  encrypt          = \""+testGossipKey+"\"\n", 1) + p.block()
	c, err := ParseConfig("agent.hcl", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Merge(c)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	want := TLSConfig{HTTP: true, RPC: true, CAFile: p.path("drover-agent-ca.pem"),
		CertFile: p.path("global-server-drover.pem"), KeyFile: p.path("global-server-drover-key.pem"),
		VerifyServerHostname: true, VerifyHTTPSClient: true}
	if cfg.TLS == nil || *cfg.TLS != want {
		t.Errorf("tls = %+v; want %+v", cfg.TLS, want)
	}
	if cfg.Server.Encrypt != testGossipKey || !cfg.Server.Enabled {
		t.Errorf("server = %+v; want enabled with the encrypt key", *cfg.Server)
	}
}

func TestTLSConfigErrorsNameTheField(t *testing.T) {
	p := newAgentPKI(t)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	tests := []struct {
		name    string
		tls     *TLSConfig
		encrypt string
		want    []string
	}{
		{name: "missing ca", tls: &TLSConfig{RPC: true, CAFile: missing, CertFile: p.path("global-server-drover.pem"), KeyFile: p.path("global-server-drover-key.pem")},
			want: []string{`agent config: tls.ca_file "` + missing + `": no such file or directory`}},
		{name: "cert is a key", tls: &TLSConfig{HTTP: true, CertFile: p.path("global-server-drover-key.pem"), KeyFile: p.path("global-server-drover-key.pem")},
			want: []string{"agent config: tls.cert_file", "no PEM certificate"}},
		{name: "key of another cert", tls: &TLSConfig{HTTP: true, CertFile: p.path("global-server-drover.pem"), KeyFile: p.path("global-client-drover-key.pem")},
			want: []string{"agent config: tls.cert_file", "key_file", "does not match"}},
		{name: "no files", tls: &TLSConfig{RPC: true},
			want: []string{"agent config: tls.cert_file is required", "agent config: tls.key_file is required", "agent config: tls.ca_file is required"}},
		{name: "tls off: files unchecked", tls: &TLSConfig{CAFile: missing}, want: nil},
		{name: "short key", encrypt: "c2hvcnQ=", want: []string{"agent config: server.encrypt: gossip key is 5 bytes; want 16, 24 or 32"}},
		{name: "not base64", encrypt: "!!!", want: []string{"agent config: server.encrypt: gossip key is not base64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DevConfig()
			cfg.TLS = tt.tls
			cfg.Server.Encrypt = tt.encrypt
			err := cfg.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate = %v; want ok", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = ok; want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %v; want it to contain %q", err, w)
				}
			}
		})
	}
}

// httpsClient is an HTTPS client trusting the PKI's CA, presenting the
// cli certificate when withCert.
func (p *agentPKI) httpsClient(t *testing.T, withCert bool) *http.Client {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(p.caCert)
	conf := &tls.Config{RootCAs: roots}
	if withCert {
		pair, err := tls.LoadX509KeyPair(p.path("global-cli-drover.pem"), p.path("global-cli-drover-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: conf}}
}

// TestAgentTLS: a dev agent with TLS on HTTP and RPC (its client reaches
// its server over mutual TLS) and gossip encryption serves HTTPS to a
// client with a certificate only, refuses plain HTTP, lists its gossip
// keys, and serves a new certificate after Reload.
func TestAgentTLS(t *testing.T) {
	p := newAgentPKI(t)
	c, err := ParseConfig("tls.hcl", []byte(p.block()))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DevConfig()
	cfg.Merge(c)
	cfg.Server.Encrypt = testGossipKey
	cfg.Ports = &PortsConfig{HTTP: 0, RPC: 0, Serf: 0}
	cfg.DataDir = t.TempDir()
	cfg.LogLevel = "WARN"
	cfg.DevGPUs = 1
	a, err := NewAgent(cfg, io.Discard)
	if err != nil {
		t.Fatalf("start agent: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	if !strings.HasPrefix(a.HTTPURL(), "https://") {
		t.Fatalf("HTTPURL = %s; want https", a.HTTPURL())
	}
	base := "https://" + a.HTTPAddr()
	hc := p.httpsClient(t, true)

	// The node registers over the RPC port's mutual TLS.
	deadline := time.Now().Add(15 * time.Second)
	for {
		var nodes []map[string]any
		if code := httpsJSON(t, hc, base+"/v1/nodes", &nodes); code == http.StatusOK && len(nodes) == 1 && nodes[0]["Status"] == "ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no ready node over TLS after 15s")
		}
		time.Sleep(50 * time.Millisecond)
	}

	if resp, err := http.Get("http://" + a.HTTPAddr() + "/v1/nodes"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP answered 200 %q", body)
		}
	}
	if _, err := p.httpsClient(t, false).Get(base + "/v1/nodes"); err == nil {
		t.Error("HTTPS without a client certificate was answered; verify_https_client requires one")
	}

	var keys structs.KeyringResponse
	if code := httpsJSON(t, hc, base+"/v1/agent/keyring/list", &keys); code != http.StatusOK || keys.Keys[testGossipKey] != 1 || keys.NumNodes != 1 {
		t.Errorf("keyring list = %d %+v; want the key on 1 server", code, keys)
	}

	serial := func() string {
		t.Helper()
		resp, err := hc.Get(base + "/v1/agent/self")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	p.issue(t, tlsconf.RoleServer)
	if err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	hc.CloseIdleConnections()
	if after := serial(); after == before {
		t.Errorf("serial after Reload = %s, the old certificate's", after)
	}
}

func httpsJSON(t *testing.T, hc *http.Client, url string, out any) int {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return resp.StatusCode
}
