package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is the agent's tls block, named as in the agent config (ca_file,
// cert_file...), with the region whose server name is checked.
type Config struct {
	// HTTP serves the HTTP API over TLS; RPC makes every RPC and Raft
	// connection mutual TLS.
	HTTP, RPC bool
	// CAFile holds the PEM certificates peers are verified against;
	// CertFile and KeyFile are this agent's PEM certificate (chain) and
	// key.
	CAFile, CertFile, KeyFile string
	// VerifyServerHostname makes RPC peers acting as servers (a server
	// dialed, Raft and server-to-server connections received) prove it
	// with a certificate for server.<Region>.drover.
	VerifyServerHostname bool
	// VerifyHTTPSClient requires HTTPS clients to present a certificate
	// from the CA.
	VerifyHTTPSClient bool
	// Region is the agent's region ("global" when empty).
	Region string
}

// Enabled reports whether any TLS is configured.
func (c Config) Enabled() bool { return c.HTTP || c.RPC }

// ErrNotServer is a peer whose certificate does not name a server of the
// region while verify_server_hostname is on.
var ErrNotServer = errors.New("tlsconf: peer is not a server of this region")

// handshakeTimeout bounds a handshake when the caller gives no timeout.
const handshakeTimeout = 10 * time.Second

// keys is one generation of the loaded files.
type keys struct {
	cert  *tls.Certificate
	roots *x509.CertPool // nil without a CA file
}

// Configurator holds the loaded files and builds tls.Configs that read
// them at each handshake, so Reload reaches configs handed out before.
// It is safe for concurrent use.
type Configurator struct {
	cfg      Config
	keys     atomic.Pointer[keys]
	reloadMu sync.Mutex

	incomingRPC, outgoingRPC, incomingHTTP *tls.Config
}

// New loads cfg's files. Errors name the field and the file.
func New(cfg Config) (*Configurator, error) {
	if cfg.Region == "" {
		cfg.Region = "global"
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	c := &Configurator{cfg: cfg}
	k, err := load(cfg)
	if err != nil {
		return nil, err
	}
	c.keys.Store(k)
	c.incomingRPC = &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: c.rpcServerConfig}
	c.incomingHTTP = &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: c.httpServerConfig}
	c.outgoingRPC = &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is verified in VerifyConnection, against the CA of
		// the moment and with Drover's server names, not the dialed
		// address (peers are dialed by IP).
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return c.keys.Load().cert, nil
		},
		VerifyConnection: c.verifyServer,
	}
	return c, nil
}

// check reports the fields an enabled block is missing.
func (c Config) check() error {
	if !c.Enabled() {
		return errors.New("tls: neither http nor rpc is enabled")
	}
	var errs []error
	if c.CertFile == "" {
		errs = append(errs, errors.New("cert_file is required with http or rpc TLS"))
	}
	if c.KeyFile == "" {
		errs = append(errs, errors.New("key_file is required with http or rpc TLS"))
	}
	if c.CAFile == "" && (c.RPC || (c.HTTP && c.VerifyHTTPSClient)) {
		errs = append(errs, errors.New("ca_file is required with rpc TLS or verify_https_client"))
	}
	return errors.Join(errs...)
}

// Config returns the configuration the Configurator was made with.
func (c *Configurator) Config() Config { return c.cfg }

// Reload reads the files again. On error the loaded ones stay in use.
// Handshakes after it use the new key pair and CA; open connections are
// not touched.
func (c *Configurator) Reload() error {
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	k, err := load(c.cfg)
	if err != nil {
		return err
	}
	c.keys.Store(k)
	return nil
}

// Certificate returns the key pair in use (its Leaf is set).
func (c *Configurator) Certificate() *tls.Certificate { return c.keys.Load().cert }

// load reads the CA, certificate and key files.
func load(cfg Config) (*keys, error) {
	k := &keys{}
	if cfg.CAFile != "" {
		pool, err := loadCA(cfg.CAFile)
		if err != nil {
			return nil, err
		}
		k.roots = pool
	}
	certPEM, err := readPEM("cert_file", cfg.CertFile, "CERTIFICATE")
	if err != nil {
		return nil, err
	}
	keyPEM, err := readPEM("key_file", cfg.KeyFile, "PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("cert_file %q, key_file %q: %w", cfg.CertFile, cfg.KeyFile, err)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("cert_file %q: %w", cfg.CertFile, err)
		}
	}
	if cfg.RPC {
		// Peers verify this certificate against the same CA: say so
		// now rather than at every handshake.
		if err := verifyChain(pair.Leaf, pair.Certificate[1:], k.roots, x509.ExtKeyUsageAny); err != nil {
			return nil, fmt.Errorf("cert_file %q is not signed by ca_file %q: %w", cfg.CertFile, cfg.CAFile, err)
		}
	}
	k.cert = &pair
	return k, nil
}

// loadCA reads a PEM file of one or more CA certificates.
func loadCA(path string) (*x509.CertPool, error) {
	buf, err := readPEM("ca_file", path, "CERTIFICATE")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := buf; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("ca_file %q: %w", path, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("ca_file %q: no PEM certificate in it", path)
	}
	return pool, nil
}

// readPEM reads a file that must hold a PEM block whose type ends with
// kind ("CERTIFICATE", "PRIVATE KEY").
func readPEM(field, path, kind string) ([]byte, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s %q: %w", field, path, err)
	}
	for rest := buf; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, fmt.Errorf("%s %q: no PEM %s in it", field, path, strings.ToLower(kind))
		}
		if strings.HasSuffix(block.Type, kind) {
			return buf, nil
		}
	}
}

// verifyChain checks leaf against roots with the given intermediates
// (DER) and key usage.
func verifyChain(leaf *x509.Certificate, intermediates [][]byte, roots *x509.CertPool, usage x509.ExtKeyUsage) error {
	if roots == nil {
		return errors.New("no CA to verify against")
	}
	inter := x509.NewCertPool()
	for _, der := range intermediates {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return err
		}
		inter.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// ServerNames are the DNS names a server certificate of region may carry:
// Drover's first, then Nomad's.
func ServerNames(region string) []string {
	return []string{"server." + region + ".drover", "server." + region + ".nomad"}
}

// checkServerName returns nil when cert names a server of the region.
func (c *Configurator) checkServerName(cert *x509.Certificate) error {
	names := ServerNames(c.cfg.Region)
	for _, n := range names {
		if cert.VerifyHostname(n) == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: its certificate (DNS names %v) does not name %s", ErrNotServer, cert.DNSNames, names[0])
}

// CheckServerPeer checks, with verify_server_hostname, that a
// connection's peer certificate names a server of the region; without
// it, any certificate from the CA (already verified) passes.
func (c *Configurator) CheckServerPeer(cs tls.ConnectionState) error {
	if !c.cfg.VerifyServerHostname {
		return nil
	}
	if len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("%w: it presented no certificate", ErrNotServer)
	}
	return c.checkServerName(cs.PeerCertificates[0])
}

// verifyServer is the dialing side's check of a server: a chain to the
// CA for server use and, with verify_server_hostname, a server name.
func (c *Configurator) verifyServer(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server presented no certificate")
	}
	leaf := cs.PeerCertificates[0]
	var inter [][]byte
	for _, ic := range cs.PeerCertificates[1:] {
		inter = append(inter, ic.Raw)
	}
	if err := verifyChain(leaf, inter, c.keys.Load().roots, x509.ExtKeyUsageServerAuth); err != nil {
		return fmt.Errorf("tls: server certificate: %w", err)
	}
	return c.CheckServerPeer(cs)
}

// rpcServerConfig is the config of one RPC handshake received: this
// agent's current certificate, and a client certificate from the CA
// required.
func (c *Configurator) rpcServerConfig(*tls.ClientHelloInfo) (*tls.Config, error) {
	k := c.keys.Load()
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{*k.cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    k.roots,
		// No resumption: a session resumed after a CA rotation (SIGHUP)
		// would skip the new CA's check.
		SessionTicketsDisabled: true,
	}, nil
}

// httpServerConfig is the config of one HTTPS handshake: HTTP/1.1 only
// (the exec websocket upgrades an HTTP/1.1 connection), a client
// certificate from the CA required with verify_https_client.
func (c *Configurator) httpServerConfig(*tls.ClientHelloInfo) (*tls.Config, error) {
	k := c.keys.Load()
	conf := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{*k.cert},
		NextProtos:   []string{"http/1.1"},
		// No resumption past a CA rotation (see rpcServerConfig).
		SessionTicketsDisabled: true,
	}
	if c.cfg.VerifyHTTPSClient {
		conf.ClientAuth = tls.RequireAndVerifyClientCert
		conf.ClientCAs = k.roots
	}
	return conf, nil
}

// IncomingRPC is the server side of the RPC port: mutual TLS with the CA.
func (c *Configurator) IncomingRPC() *tls.Config { return c.incomingRPC }

// OutgoingRPC is the dialing side of the RPC port: this agent's
// certificate presented, the server's verified (see verifyServer).
func (c *Configurator) OutgoingRPC() *tls.Config { return c.outgoingRPC }

// IncomingHTTP is the HTTPS API's config.
func (c *Configurator) IncomingHTTP() *tls.Config { return c.incomingHTTP }

// Client runs the dialing side's handshake on conn, within timeout (0:
// a default); on error conn is closed.
func (c *Configurator) Client(ctx context.Context, conn net.Conn, timeout time.Duration) (*tls.Conn, error) {
	return handshake(ctx, tls.Client(conn, c.outgoingRPC), conn, timeout)
}

// Server runs the RPC server side's handshake on conn, within timeout
// (0: a default); on error conn is closed.
func (c *Configurator) Server(ctx context.Context, conn net.Conn, timeout time.Duration) (*tls.Conn, error) {
	return handshake(ctx, tls.Server(conn, c.incomingRPC), conn, timeout)
}

func handshake(ctx context.Context, tc *tls.Conn, raw net.Conn, timeout time.Duration) (*tls.Conn, error) {
	if timeout <= 0 {
		timeout = handshakeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("tls handshake with %s: %w", raw.RemoteAddr(), err)
	}
	return tc, nil
}
