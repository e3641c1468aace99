package dockercluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
	"github.com/droverhq/drover/tlsconf"
)

// Where an agent finds its TLS files in its container.
const (
	caFile   = "/etc/drover/ca.pem"
	certFile = "/etc/drover/agent.pem"
	keyFile  = "/etc/drover/agent-key.pem"
)

// certDays is the validity of the run's CA and certificates.
const certDays = 2

// secrets are what a secure cluster shares: one CA signing every
// agent's certificate and the test's, the servers' gossip key, and the
// management secret the test bootstraps the ACLs with (chosen up front,
// as `drover acl bootstrap FILE` does, so every client can carry it from
// the start).
type secrets struct {
	caCert, caKey []byte
	gossipKey     string
	management    string
	// tls is the test's side of HTTPS: the CA and a CLI certificate.
	tls *tls.Config
}

func newSecrets(t *testing.T) *secrets {
	t.Helper()
	caCert, caKey, err := tlsconf.CreateCA(tlsconf.CAOptions{Domain: tlsconf.DefaultDomain, Days: certDays})
	if err != nil {
		t.Fatal(err)
	}
	s := &secrets{caCert: caCert, caKey: caKey, management: structs.GenerateUUID()}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	s.gossipKey = base64.StdEncoding.EncodeToString(key)
	cliCert, cliKey, err := s.cert(tlsconf.RoleCLI, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cliCert, cliKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caCert) {
		t.Fatal("CA certificate: no PEM certificate")
	}
	s.tls = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{pair}}
	return s
}

// cert creates a certificate for role, with the role's name
// (server.global.drover) and the given names and addresses.
func (s *secrets) cert(role tlsconf.Role, names []string, ips []net.IP) (certPEM, keyPEM []byte, err error) {
	return tlsconf.CreateCert(tlsconf.CertOptions{
		Role: role, Region: "global", Domain: tlsconf.DefaultDomain, Days: certDays,
		DNSNames: names, IPAddresses: ips, CACert: s.caCert, CAKey: s.caKey,
	})
}

// agentFiles returns m's TLS files, by path in its container: the CA,
// and a server or client certificate naming m's container and address.
func (c *cluster) agentFiles(m *member) []file {
	role := tlsconf.RoleClient
	if m.server {
		role = tlsconf.RoleServer
	}
	cert, key, err := c.sec.cert(role, []string{m.name, c.prefix + "-" + m.name}, []net.IP{m.ip.AsSlice()})
	if err != nil {
		c.t.Fatalf("certificate for %s: %v", m.name, err)
	}
	return []file{
		{caFile, 0o644, c.sec.caCert},
		{certFile, 0o644, cert},
		{keyFile, 0o600, key},
	}
}

// securityConfig is the tls and acl blocks every agent runs with.
func securityConfig() string {
	return fmt.Sprintf(`tls {
  http      = true
  rpc       = true
  ca_file   = %q
  cert_file = %q
  key_file  = %q
  verify_server_hostname = true
  verify_https_client    = true
}
acl {
  enabled = true
}
`, caFile, certFile, keyFile)
}

// httpClient is the test's HTTPS client: a partitioned or killed member
// must not hold a request for long, so connecting fails fast and no
// answer takes longer than a server's wait for a new leader (5s) and
// some.
func (c *cluster) httpClient() *http.Client {
	transport := &http.Transport{
		DialContext:       (&net.Dialer{Timeout: time.Second}).DialContext,
		TLSClientConfig:   c.sec.tls,
		DisableKeepAlives: true,
	}
	return &http.Client{Timeout: 8 * time.Second, Transport: transport}
}

// apiClient returns a client of m's HTTPS API that sends token.
func (c *cluster) apiClient(m *member, token string) *api.Client {
	a, err := api.NewClient(&api.Config{Address: m.httpAddr(), SecretID: token, HTTPClient: c.httpClient()})
	if err != nil {
		c.t.Fatal(err)
	}
	return a
}

// bootstrapACL bootstraps the ACLs of the cluster that servers form
// with the management secret, asking them in turn until one answers and
// the secret works (a bootstrap whose answer was lost took effect all
// the same, so the next try is refused: the secret decides).
func (c *cluster) bootstrapACL(servers []*member) {
	c.t.Helper()
	var last error
	try := 0
	waitUntil(c.t, 30*time.Second, "ACL bootstrap", func() bool {
		s := servers[try%len(servers)]
		try++
		if !s.reachable() {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, _, err := s.api.ACLTokens().Self(ctx, nil); err == nil {
			return true
		}
		_, _, last = s.api.ACLTokens().Bootstrap(ctx, c.sec.management, nil)
		if last != nil {
			c.t.Logf("ACL bootstrap through %s: %v", s.name, last)
		}
		return false
	})
}

// createToken creates a policy with rules and a client token holding it,
// waits until every server's own state has the token, and returns its
// secret.
func (c *cluster) createToken(name, rules string) string {
	c.t.Helper()
	var secret string
	waitUntil(c.t, 30*time.Second, "token "+name, func() bool {
		s := c.anyServer()
		if s == nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := s.api.ACLPolicies().Upsert(ctx, &structs.ACLPolicy{Name: name, Rules: rules}, nil); err != nil {
			c.t.Logf("upsert policy %s through %s: %v", name, s.name, err)
			return false
		}
		tok, _, err := s.api.ACLTokens().Create(ctx, &structs.ACLToken{Name: name, Type: structs.ACLClientToken, Policies: []string{name}}, nil)
		if err != nil {
			c.t.Logf("create token %s through %s: %v", name, s.name, err)
			return false
		}
		secret = tok.SecretID
		return true
	})
	for _, s := range c.servers {
		a := c.apiClient(s, secret)
		waitUntil(c.t, 30*time.Second, "token "+name+" on "+s.name, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _, err := a.Jobs().List(ctx, &api.QueryOptions{AllowStale: true})
			return err == nil
		})
	}
	return secret
}

// checkSecurity checks that srv refuses what TLS and the ACLs must
// refuse: plaintext HTTP, HTTPS without a client certificate, a request
// without a token, a management call with the workload's token, a
// plaintext RPC connection and a server's RPC session from a certificate
// that is not a server's; and that gossip is encrypted with the run's
// key. It returns what it saw.
func (c *cluster) checkSecurity(srv *member, workloadToken string) string {
	c.t.Helper()
	var seen []string
	base := fmt.Sprintf("%s:%d", srv.ip, httpPort)
	// Plaintext HTTP to the HTTPS port: no answer, or Go's 400 for it.
	plain := &http.Client{Timeout: 5 * time.Second}
	if res, err := plain.Get("http://" + base + "/v1/status/leader"); err != nil {
		seen = append(seen, "plaintext HTTP refused")
	} else {
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			c.t.Errorf("plaintext http://%s/v1/status/leader: got %s, want a refusal", base, res.Status)
		}
		seen = append(seen, "plaintext HTTP answered "+res.Status)
	}
	// HTTPS without a client certificate: the handshake fails.
	noCert := c.sec.tls.Clone()
	noCert.Certificates = nil
	anon := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: noCert}}
	if res, err := anon.Get("https://" + base + "/v1/status/leader"); err == nil {
		res.Body.Close()
		c.t.Errorf("HTTPS without a client certificate: got %s, want a failed handshake", res.Status)
	} else {
		seen = append(seen, "no client certificate refused")
	}
	// A certificate but no token, then the workload's token on a
	// management endpoint: 403.
	for _, tt := range []struct{ what, token, path string }{
		{"anonymous", "", "/v1/jobs"},
		{"workload token", workloadToken, "/v1/acl/tokens"},
	} {
		req, err := http.NewRequest(http.MethodGet, "https://"+base+tt.path, nil)
		if err != nil {
			c.t.Fatal(err)
		}
		if tt.token != "" {
			req.Header.Set(api.TokenHeader, tt.token)
		}
		res, err := c.httpClient().Do(req)
		if err != nil {
			c.t.Errorf("%s GET %s: %v", tt.what, tt.path, err)
			continue
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			c.t.Errorf("%s GET %s: got %s (%s), want 403", tt.what, tt.path, res.Status, strings.TrimSpace(string(body)))
		}
		seen = append(seen, fmt.Sprintf("%s %s %d", tt.what, tt.path, res.StatusCode))
	}
	// RPC: plaintext, and a server-to-server session from the test's
	// CLI certificate (from the CA, but not a server's).
	rpc := fmt.Sprintf("%s:%d", srv.ip, rpcPort)
	notServer := c.sec.tls.Clone()
	notServer.ServerName = "server.global." + tlsconf.DefaultDomain
	for _, tt := range []struct {
		what string
		conf *tls.Config
	}{
		{"plaintext RPC", nil},
		{"server RPC with a CLI certificate", notServer},
	} {
		if err := rpcSessionClosed(rpc, tt.conf); err != nil {
			c.t.Errorf("%s: %v", tt.what, err)
			continue
		}
		seen = append(seen, tt.what+" closed")
	}
	// Gossip: every server encrypts with the run's key (a keyring
	// exists only with encryption on).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	keys, err := srv.api.Agent().ListKeys(ctx)
	switch {
	case err != nil:
		c.t.Errorf("gossip keyring: %v", err)
	case keys.Keys[c.sec.gossipKey] != len(c.servers):
		c.t.Errorf("gossip keyring: got %v, want the run's key on %d servers", keys.Keys, len(c.servers))
	default:
		seen = append(seen, fmt.Sprintf("gossip key on %d/%d servers", keys.Keys[c.sec.gossipKey], len(c.servers)))
	}
	return strings.Join(seen, ", ")
}

// rpcSessionClosed dials addr and asks for an RPC session (the kind
// servers open to each other), plaintext when conf is nil, else over TLS
// with conf; it checks that the server closes the connection instead of
// serving it.
func rpcSessionClosed(addr string, conf *tls.Config) error {
	raw, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(5 * time.Second))
	conn := raw
	if conf != nil {
		if _, err := raw.Write([]byte{structs.RPCTypeTLS}); err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
		tc := tls.Client(raw, conf)
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("%s: TLS handshake: %w", addr, err)
		}
		conn = tc
	}
	if _, err := conn.Write([]byte{structs.RPCTypeRPC}); err != nil {
		return nil // closed already
	}
	var buf [1]byte
	_, err = conn.Read(buf[:])
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%s kept the connection open", addr)
	case err == nil:
		return fmt.Errorf("%s answered on the connection", addr)
	}
	return nil
}
