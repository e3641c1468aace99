package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func x509PoolFromFile(t *testing.T, path string) *x509.CertPool {
	t.Helper()
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(buf) {
		t.Fatalf("%s: no certificates", path)
	}
	return pool
}

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCreateCA(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	certPEM, keyPEM, err := CreateCA(CAOptions{Domain: "drover", Days: 1825, CommonName: "Test CA", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ca := parseCert(t, certPEM)
	if !ca.IsCA || ca.Subject.CommonName != "Test CA" {
		t.Errorf("CA: IsCA %v, CN %q; want a CA named Test CA", ca.IsCA, ca.Subject.CommonName)
	}
	if got, want := ca.NotAfter, now.AddDate(0, 0, 1825); !got.Equal(want) {
		t.Errorf("NotAfter = %v; want %v", got, want)
	}
	pub, ok := ca.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("key = %T; want ECDSA P-256", ca.PublicKey)
	}
	if !strings.Contains(string(keyPEM), "EC PRIVATE KEY") {
		t.Errorf("key PEM type: %q", keyPEM[:30])
	}
}

func TestCreateCertNamesAndUsage(t *testing.T) {
	caPEM, caKey, err := CreateCA(CAOptions{Domain: "drover", Days: 30})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)

	tests := []struct {
		role      Role
		wantDNS   []string
		wantIPs   []string
		wantUsage []x509.ExtKeyUsage
	}{
		{role: RoleServer, wantDNS: []string{"server.eu.drover", "localhost", "extra.example"}, wantIPs: []string{"127.0.0.1", "10.0.0.5"},
			wantUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		{role: RoleClient, wantDNS: []string{"client.eu.drover", "localhost", "extra.example"}, wantIPs: []string{"127.0.0.1", "10.0.0.5"},
			wantUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		{role: RoleCLI, wantDNS: []string{"cli.eu.drover", "localhost", "extra.example"}, wantIPs: []string{"10.0.0.5"},
			wantUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	}
	for _, tt := range tests {
		t.Run(string(tt.role), func(t *testing.T) {
			certPEM, _, err := CreateCert(CertOptions{Role: tt.role, Region: "eu", Domain: "drover", Days: 365,
				DNSNames: []string{"extra.example"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.5")}, CACert: caPEM, CAKey: caKey})
			if err != nil {
				t.Fatal(err)
			}
			c := parseCert(t, certPEM)
			var ips []string
			for _, ip := range c.IPAddresses {
				ips = append(ips, ip.String())
			}
			if !slices.Equal(c.DNSNames, tt.wantDNS) || !slices.Equal(ips, tt.wantIPs) || !slices.Equal(c.ExtKeyUsage, tt.wantUsage) {
				t.Errorf("DNS %v, IPs %v, usage %v; want %v, %v, %v", c.DNSNames, ips, c.ExtKeyUsage, tt.wantDNS, tt.wantIPs, tt.wantUsage)
			}
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
				t.Errorf("verify against the CA: %v", err)
			}
		})
	}
}

func TestCreateCertRefusesMismatchedCA(t *testing.T) {
	caPEM, _, err := CreateCA(CAOptions{Days: 30})
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := CreateCA(CAOptions{Days: 30})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = CreateCert(CertOptions{Role: RoleServer, Region: "global", Domain: "drover", Days: 1, CACert: caPEM, CAKey: otherKey})
	if err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("CreateCert with another CA's key = %v; want a mismatch error", err)
	}
}
