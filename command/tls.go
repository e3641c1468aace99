package command

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"

	"github.com/droverhq/drover/tlsconf"
)

// TLSCACreateCommand is `drover tls ca create`.
type TLSCACreateCommand struct{ Meta }

func (c *TLSCACreateCommand) Synopsis() string { return "Create a certificate authority for agent TLS" }

func (c *TLSCACreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover tls ca create [options]

  Creates a certificate authority for the agents' TLS: <domain>-agent-ca.pem
  and its key <domain>-agent-ca-key.pem (mode 0600) in the current
  directory. Existing files are never overwritten. Keys are ECDSA P-256.

Options:

  -domain=<domain>
    The domain of the cluster's certificate names and file names
    (drover).

  -days=<n>
    How many days the CA is valid (1825).

  -common-name=<name>
    The CA's common name (Drover Agent CA <serial>).
`)
}

func (c *TLSCACreateCommand) Run(args []string) int {
	fs := flag.NewFlagSet("tls ca create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	domain := fs.String("domain", tlsconf.DefaultDomain, "")
	days := fs.Int("days", 1825, "")
	cn := fs.String("common-name", "", "")
	if _, ok := c.parse(fs, args); !ok {
		return exitError
	}
	if fs.NArg() > 0 {
		return c.usageError("tls ca create", "no arguments")
	}
	certFile, keyFile := *domain+"-agent-ca.pem", *domain+"-agent-ca-key.pem"
	if err := refuseExisting(certFile, keyFile); err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	cert, key, err := tlsconf.CreateCA(tlsconf.CAOptions{Domain: *domain, Days: *days, CommonName: *cn})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating the CA: %s", err))
		return exitError
	}
	if err := writeNew(certFile, cert, 0o644); err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	c.Ui.Output("==> CA certificate saved to: " + certFile)
	if err := writeNew(keyFile, key, 0o600); err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	c.Ui.Output("==> CA certificate key saved to: " + keyFile)
	return 0
}

// TLSCertCreateCommand is `drover tls cert create`.
type TLSCertCreateCommand struct{ Meta }

func (c *TLSCertCreateCommand) Synopsis() string {
	return "Create a server, client or CLI certificate signed by the CA"
}

func (c *TLSCertCreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover tls cert create -server|-client|-cli [options]

  Creates a certificate and its key (mode 0600) in the current directory,
  signed by the CA that 'drover tls ca create' made:
  <region>-server-<domain>.pem, <region>-client-<domain>.pem or
  <region>-cli-<domain>.pem, each with its -key.pem. Existing files are
  never overwritten.

  Server certificates name server.<region>.<domain> (what
  verify_server_hostname checks), localhost and 127.0.0.1; client
  certificates client.<region>.<domain>, localhost and 127.0.0.1; CLI
  certificates cli.<region>.<domain> and localhost, for the client side
  of HTTPS only.

Options:

  -server, -client, -cli
    The certificate's role; exactly one.

  -region=<region>
    The region the certificate is for (global).

  -domain=<domain>
    The domain of the names (drover).

  -days=<n>
    How many days the certificate is valid (365; at most the CA's).

  -ca=<file>
    The CA certificate (<domain>-agent-ca.pem).

  -key=<file>
    The CA key (<domain>-agent-ca-key.pem).

  -additional-dnsname=<name>
    Another DNS name for the certificate; may be repeated.

  -additional-ipaddress=<ip>
    Another IP address for the certificate; may be repeated.
`)
}

func (c *TLSCertCreateCommand) Run(args []string) int {
	fs := flag.NewFlagSet("tls cert create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		srv, cl, cli     bool
		dnsNames, ipList stringList
	)
	fs.BoolVar(&srv, "server", false, "")
	fs.BoolVar(&cl, "client", false, "")
	fs.BoolVar(&cli, "cli", false, "")
	region := fs.String("region", "global", "")
	domain := fs.String("domain", tlsconf.DefaultDomain, "")
	days := fs.Int("days", 365, "")
	caFile := fs.String("ca", "", "")
	keyFile := fs.String("key", "", "")
	fs.Var(&dnsNames, "additional-dnsname", "")
	fs.Var(&ipList, "additional-ipaddress", "")
	if _, ok := c.parse(fs, args); !ok {
		return exitError
	}
	if fs.NArg() > 0 {
		return c.usageError("tls cert create", "no arguments")
	}
	var role tlsconf.Role
	switch {
	case srv && !cl && !cli:
		role = tlsconf.RoleServer
	case cl && !srv && !cli:
		role = tlsconf.RoleClient
	case cli && !srv && !cl:
		role = tlsconf.RoleCLI
	default:
		c.Ui.Error("Give exactly one of -server, -client or -cli.")
		return exitError
	}
	var ips []net.IP
	for _, s := range ipList {
		ip := net.ParseIP(s)
		if ip == nil {
			c.Ui.Error(fmt.Sprintf("-additional-ipaddress %q is not an IP address", s))
			return exitError
		}
		ips = append(ips, ip)
	}
	if *caFile == "" {
		*caFile = *domain + "-agent-ca.pem"
	}
	if *keyFile == "" {
		*keyFile = *domain + "-agent-ca-key.pem"
	}
	caCert, err := os.ReadFile(*caFile)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the CA certificate (-ca): %s", err))
		return exitError
	}
	caKey, err := os.ReadFile(*keyFile)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the CA key (-key): %s", err))
		return exitError
	}
	base := fmt.Sprintf("%s-%s-%s", *region, role, *domain)
	certOut, keyOut := base+".pem", base+"-key.pem"
	if err := refuseExisting(certOut, keyOut); err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	opts := tlsconf.CertOptions{Role: role, Region: *region, Domain: *domain, Days: *days,
		DNSNames: dnsNames, IPAddresses: ips, CACert: caCert, CAKey: caKey}
	cert, key, err := tlsconf.CreateCert(opts)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating the certificate: %s", err))
		return exitError
	}
	if err := writeNew(certOut, cert, 0o644); err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("==> Using CA file %s and CA key %s", *caFile, *keyFile))
	c.Ui.Output(fmt.Sprintf("==> %s certificate (%s) saved to: %s", role, opts.Name(), certOut))
	if err := writeNew(keyOut, key, 0o600); err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("==> %s certificate key saved to: %s", role, keyOut))
	return 0
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// refuseExisting fails when any of the files exists: the tls commands
// never overwrite a certificate or key.
func refuseExisting(paths ...string) error {
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s already exists; move it away or run in another directory (nothing was written)", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("check %s: %w", p, err)
		}
	}
	return nil
}

// writeNew creates path with mode, failing if it exists.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
