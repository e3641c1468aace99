package tlsconf

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Role is what an agent certificate is for.
type Role string

// Certificate roles, as `drover tls cert create -server|-client|-cli`.
const (
	RoleServer Role = "server"
	RoleClient Role = "client"
	RoleCLI    Role = "cli"
)

// DefaultDomain is the domain of certificate names and file names.
const DefaultDomain = "drover"

// CAOptions are the settings of a new CA.
type CAOptions struct {
	// Domain is the cluster's domain ("drover"); CommonName defaults to
	// "Drover Agent CA <serial>".
	Domain     string
	CommonName string
	Days       int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// CertOptions are the settings of a new agent certificate.
type CertOptions struct {
	Role           Role
	Region, Domain string
	Days           int
	// DNSNames and IPAddresses are added to the role's own names.
	DNSNames    []string
	IPAddresses []net.IP
	// CACert and CAKey are the signing CA's PEM certificate and key.
	CACert, CAKey []byte
	Now           func() time.Time
}

// Name is the certificate's role name: "server.global.drover".
func (o CertOptions) Name() string {
	return string(o.Role) + "." + o.Region + "." + o.Domain
}

// CreateCA returns a new self-signed CA certificate and its ECDSA P-256
// key, PEM encoded.
func CreateCA(o CAOptions) (certPEM, keyPEM []byte, err error) {
	if o.Days <= 0 {
		return nil, nil, fmt.Errorf("create CA: days %d must be positive", o.Days)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("create CA: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	cn := o.CommonName
	if cn == "" {
		cn = fmt.Sprintf("Drover Agent CA %x", serial)
	}
	domain := o.Domain
	if domain == "" {
		domain = DefaultDomain
	}
	now := clock(o.Now)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"Drover"}, OrganizationalUnit: []string{domain}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.AddDate(0, 0, o.Days),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create CA: %w", err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// CreateCert returns a new certificate for o.Role signed by the CA, and
// its ECDSA P-256 key, PEM encoded. Servers and clients get the role
// name, localhost and 127.0.0.1, for both TLS sides (they serve HTTPS
// and dial servers); CLI certificates the role name and localhost, for
// the client side only.
func CreateCert(o CertOptions) (certPEM, keyPEM []byte, err error) {
	if o.Days <= 0 {
		return nil, nil, fmt.Errorf("create certificate: days %d must be positive", o.Days)
	}
	if o.Region == "" || o.Domain == "" {
		return nil, nil, errors.New("create certificate: region and domain are required")
	}
	ca, caKey, err := parseCA(o.CACert, o.CAKey)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: o.Name()},
		DNSNames:              append([]string{o.Name(), "localhost"}, o.DNSNames...),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	switch o.Role {
	case RoleServer, RoleClient:
		tmpl.IPAddresses = append([]net.IP{net.IPv4(127, 0, 0, 1)}, o.IPAddresses...)
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	case RoleCLI:
		tmpl.IPAddresses = o.IPAddresses
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	default:
		return nil, nil, fmt.Errorf("create certificate: unknown role %q", o.Role)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate: %w", err)
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return nil, nil, err
	}
	now := clock(o.Now)
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Minute), now.AddDate(0, 0, o.Days)
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter // a certificate outliving its CA fails verification anyway
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate: %w", err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// parseCA reads a CA certificate and its key, and checks that they
// belong together.
func parseCA(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, errors.New("CA certificate: no PEM certificate")
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("CA certificate: %w", err)
	}
	if !ca.IsCA {
		return nil, nil, errors.New("CA certificate: not a CA (basic constraints)")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, errors.New("CA key: no PEM key")
	}
	key, err := parseKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("CA key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("CA key: %w", err)
	}
	if !bytes.Equal(pub, ca.RawSubjectPublicKeyInfo) {
		return nil, nil, errors.New("CA key does not match the CA certificate")
	}
	return ca, key, nil
}

// parseKey reads an EC (SEC 1), PKCS #8 or PKCS #1 private key.
func parseKey(der []byte) (crypto.Signer, error) {
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, errors.New("not an EC, PKCS #1 or PKCS #8 private key")
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key type %T cannot sign", k)
	}
	return s, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// newSerial is a random 128-bit serial number.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n, nil
}

func clock(now func() time.Time) time.Time {
	if now == nil {
		return time.Now()
	}
	return now()
}
