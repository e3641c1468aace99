package agent

import (
	"fmt"

	"github.com/droverhq/drover/server"
	"github.com/droverhq/drover/tlsconf"
)

// TLSConfig is the tls block, Nomad's keys: http serves the HTTP API
// over TLS; rpc makes every RPC and Raft connection mutual TLS with the
// CA in ca_file (verify_server_hostname: servers must prove it with a
// certificate for server.<region>.drover); verify_https_client requires
// HTTPS clients to present a certificate from the CA. File paths are
// relative to the agent's working directory; SIGHUP reads the files
// again. A later config file's tls block replaces an earlier one's.
type TLSConfig struct {
	HTTP                 bool   `hcl:"http,optional"`
	RPC                  bool   `hcl:"rpc,optional"`
	CAFile               string `hcl:"ca_file,optional"`
	CertFile             string `hcl:"cert_file,optional"`
	KeyFile              string `hcl:"key_file,optional"`
	VerifyServerHostname bool   `hcl:"verify_server_hostname,optional"`
	VerifyHTTPSClient    bool   `hcl:"verify_https_client,optional"`
}

// tlsEnabled reports whether the HTTP API or the RPC port uses TLS.
func (c *Config) tlsEnabled() bool { return c.TLS != nil && (c.TLS.HTTP || c.TLS.RPC) }

// httpTLS reports whether the HTTP API is served over TLS.
func (c *Config) httpTLS() bool { return c.TLS != nil && c.TLS.HTTP }

// rpcTLS reports whether the RPC port is mutual TLS.
func (c *Config) rpcTLS() bool { return c.TLS != nil && c.TLS.RPC }

// tlsConfigurator loads the tls block's files; nil without TLS.
func (c *Config) tlsConfigurator() (*tlsconf.Configurator, error) {
	if !c.tlsEnabled() {
		return nil, nil
	}
	t := c.TLS
	return tlsconf.New(tlsconf.Config{
		HTTP: t.HTTP, RPC: t.RPC,
		CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile,
		VerifyServerHostname: t.VerifyServerHostname,
		VerifyHTTPSClient:    t.VerifyHTTPSClient,
		Region:               c.Region,
	})
}

// validateSecurity checks the tls block (its files must exist, parse and
// belong together) and server.encrypt.
func (c *Config) validateSecurity() []error {
	var errs []error
	if _, err := c.tlsConfigurator(); err != nil {
		// tlsconf names the field ("cert_file ..."); one error each.
		list := []error{err}
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			list = joined.Unwrap()
		}
		for _, e := range list {
			errs = append(errs, fmt.Errorf("agent config: tls.%w", e))
		}
	}
	if _, err := c.gossipKey(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// gossipKey decodes server.encrypt; nil when unset.
func (c *Config) gossipKey() ([]byte, error) {
	if c.Server.Encrypt == "" {
		return nil, nil
	}
	k, err := server.DecodeGossipKey(c.Server.Encrypt)
	if err != nil {
		return nil, fmt.Errorf("agent config: server.encrypt: %w", err)
	}
	return k, nil
}
