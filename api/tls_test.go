package api

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/api/exectest"
)

func TestDefaultConfigFromEnv(t *testing.T) {
	vars := []string{"ADDR", "CACERT", "CLIENT_CERT", "CLIENT_KEY", "TLS_SERVER_NAME", "SKIP_VERIFY", "TOKEN"}
	tests := []struct {
		name string
		env  map[string]string
		want Config
	}{
		{name: "none", want: Config{Address: DefaultAddress, TLSConfig: &TLSConfig{}}},
		{name: "drover", env: map[string]string{"DROVER_ADDR": "https://a:1", "DROVER_CACERT": "ca.pem", "DROVER_CLIENT_CERT": "c.pem",
			"DROVER_CLIENT_KEY": "k.pem", "DROVER_TLS_SERVER_NAME": "server.global.drover", "DROVER_SKIP_VERIFY": "true", "DROVER_TOKEN": "secret"},
			want: Config{Address: "https://a:1", SecretID: "secret", TLSConfig: &TLSConfig{CACert: "ca.pem", ClientCert: "c.pem", ClientKey: "k.pem", TLSServerName: "server.global.drover", Insecure: true}}},
		{name: "nomad", env: map[string]string{"NOMAD_ADDR": "https://n:1", "NOMAD_CACERT": "nca.pem", "NOMAD_TOKEN": "nsecret"},
			want: Config{Address: "https://n:1", SecretID: "nsecret", TLSConfig: &TLSConfig{CACert: "nca.pem"}}},
		{name: "drover wins", env: map[string]string{"NOMAD_ADDR": "https://n:1", "DROVER_ADDR": "https://d:1", "NOMAD_TOKEN": "n", "DROVER_TOKEN": "d"},
			want: Config{Address: "https://d:1", SecretID: "d", TLSConfig: &TLSConfig{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range vars {
				t.Setenv("DROVER_"+v, "")
				t.Setenv("NOMAD_"+v, "")
			}
			t.Setenv(EnvRegion, "")
			t.Setenv(EnvNamespace, "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			got := DefaultConfig()
			if got.Address != tt.want.Address || got.SecretID != tt.want.SecretID || *got.TLSConfig != *tt.want.TLSConfig {
				t.Errorf("DefaultConfig = %+v %+v; want %+v %+v", got, got.TLSConfig, tt.want, tt.want.TLSConfig)
			}
		})
	}
}

// testCert is a self-signed ECDSA certificate for localhost and
// 127.0.0.1, written to dir as name.pem and name-key.pem.
func testCert(t *testing.T, dir, name string) (certFile, keyFile string, pair tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost", name}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:        true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if pair, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, pair
}

// TestHTTPSAndToken: an https:// address is reached with the configured
// CA, client certificate and server name; the token goes with every
// request, exec's websocket included.
func TestHTTPSAndToken(t *testing.T) {
	dir := t.TempDir()
	serverCertFile, _, serverPair := testCert(t, dir, "server.global.drover")
	clientCertFile, clientKeyFile, clientPair := testCert(t, dir, "cli.global.drover")

	var mu sync.Mutex
	var tokens []string
	exec := exectest.Handler(func(s *exectest.Session) { _ = s.Exit(0) })
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tokens = append(tokens, r.Header.Get(TokenHeader))
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/exec") {
			exec.ServeHTTP(w, r)
			return
		}
		w.Header().Set("X-Nomad-Index", "1")
		_, _ = w.Write([]byte(`"127.0.0.1:4647"`))
	}))
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(clientPair.Leaf)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverPair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
	srv.StartTLS()
	defer srv.Close()

	good := &TLSConfig{CACert: serverCertFile, ClientCert: clientCertFile, ClientKey: clientKeyFile, TLSServerName: "server.global.drover"}
	c, err := NewClient(&Config{Address: srv.URL, SecretID: "s3cret", TLSConfig: good})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status().Leader(context.Background()); err != nil {
		t.Fatalf("Leader over HTTPS: %v", err)
	}
	var out bytes.Buffer
	if code, err := c.Allocations().Exec(context.Background(), "a1", "t", false, []string{"true"}, nil, &out, &out, nil); err != nil || code != 0 {
		t.Fatalf("Exec over wss = %d, %v", code, err)
	}
	mu.Lock()
	if len(tokens) != 2 || tokens[0] != "s3cret" || tokens[1] != "s3cret" {
		t.Errorf("tokens seen = %q; want the token on both requests", tokens)
	}
	mu.Unlock()

	for _, tt := range []struct {
		name string
		tls  *TLSConfig
		want string
	}{
		{name: "no client certificate", tls: &TLSConfig{CACert: serverCertFile}, want: "certificate"},
		{name: "unknown CA", tls: &TLSConfig{ClientCert: clientCertFile, ClientKey: clientKeyFile}, want: "certificate"},
		{name: "wrong server name", tls: &TLSConfig{CACert: serverCertFile, ClientCert: clientCertFile, ClientKey: clientKeyFile, TLSServerName: "other.example"}, want: "other.example"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient(&Config{Address: srv.URL, TLSConfig: tt.tls})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Status().Leader(context.Background()); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Leader = %v; want an error with %q", err, tt.want)
			}
		})
	}

	insecure, err := NewClient(&Config{Address: srv.URL, TLSConfig: &TLSConfig{Insecure: true, ClientCert: clientCertFile, ClientKey: clientKeyFile}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := insecure.Status().Leader(context.Background()); err != nil {
		t.Fatalf("Leader with Insecure: %v", err)
	}
}

func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	certFile, _, _ := testCert(t, dir, "x")
	for _, tt := range []struct {
		name string
		tls  *TLSConfig
		want string
	}{
		{name: "missing CA", tls: &TLSConfig{CACert: filepath.Join(dir, "nope.pem")}, want: "CA certificate"},
		{name: "cert without key", tls: &TLSConfig{ClientCert: certFile}, want: "give both"},
		{name: "key is not a key", tls: &TLSConfig{ClientCert: certFile, ClientKey: certFile}, want: "client certificate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewClient(&Config{Address: "https://127.0.0.1:1", TLSConfig: tt.tls})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewClient = %v; want an error with %q", err, tt.want)
			}
		})
	}
}

// TestTokenNotSentToAnotherHost: a redirect to another host does not
// carry the ACL token along.
func TestTokenNotSentToAnotherHost(t *testing.T) {
	got := make(chan string, 1)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get(TokenHeader)
		_, _ = w.Write([]byte("[]"))
	}))
	defer other.Close()
	// Another host name for the same listener: localhost vs 127.0.0.1.
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer agent.Close()
	c, err := NewClient(&Config{Address: agent.URL, SecretID: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, _ = c.Jobs().List(context.Background(), nil)
	if tok := <-got; tok != "" {
		t.Errorf("the other host got token %q, want none", tok)
	}
}
