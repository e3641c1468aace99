package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tlsBlock is the tls block with role's files from dir.
func tlsBlock(dir, role string) string {
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
`, filepath.Join(dir, "drover-agent-ca.pem"), filepath.Join(dir, "global-"+role+"-drover.pem"), filepath.Join(dir, "global-"+role+"-drover-key.pem"))
}

// droverIn runs the CLI in dir and fails the test on a non-zero exit.
func droverIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, droverBin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("drover %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestE2E_TLS: a server agent and a client-only agent with TLS on HTTP
// and RPC (mutual, verify_server_hostname, verify_https_client) and
// gossip encryption, with certificates from `drover tls`: the client's
// node registers over TLS, a job run through the client agent with the
// CLI's -ca-cert/-client-cert/-client-key runs, its logs stream back
// (server to client over the TLS session), and plain http:// and a
// plaintext RPC connection are refused.
func TestE2E_TLS(t *testing.T) {
	dir := reachableDir(t)
	droverIn(t, dir, "tls", "ca", "create")
	droverIn(t, dir, "tls", "cert", "create", "-server")
	droverIn(t, dir, "tls", "cert", "create", "-client")
	droverIn(t, dir, "tls", "cert", "create", "-cli")
	key := strings.TrimSpace(droverIn(t, dir, "operator", "gossip", "keyring", "-generate"))

	sp, cp := freePorts(t, 3), freePorts(t, 3)
	serverCfg := writeFile(t, dir, "server.hcl", encryptedServerHCL(dir, sp, key)+tlsBlock(dir, "server"))
	clientCfg := clusterClientConfig(t, dir, "client-1", cp, []string{fmt.Sprintf("127.0.0.1:%d", sp[1])}, 1)
	appendFile(t, clientCfg, tlsBlock(dir, "client"))

	hc := cliHTTPSClient(t, dir)
	srv := launchAgent(t, sp[0], "-config", serverCfg)
	srv.addr, srv.hc = fmt.Sprintf("https://127.0.0.1:%d", sp[0]), hc
	cl := launchAgent(t, cp[0], "-config", clientCfg)
	cl.addr, cl.hc = fmt.Sprintf("https://127.0.0.1:%d", cp[0]), hc
	waitFor(t, 30*time.Second, "the client's node ready over TLS", func() bool { return nodesReady(srv, 1) })

	tlsEnv := []string{
		"DROVER_CACERT=" + filepath.Join(dir, "drover-agent-ca.pem"),
		"DROVER_CLIENT_CERT=" + filepath.Join(dir, "global-cli-drover.pem"),
		"DROVER_CLIENT_KEY=" + filepath.Join(dir, "global-cli-drover-key.pem"),
	}
	job := writeFile(t, dir, "hello.hcl", `job "hello" {
  type        = "batch"
  datacenters = ["dc1"]
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello over tls"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`)
	r := runCLI(t, nil, "job", "run", "-address", cl.addr,
		"-ca-cert", filepath.Join(dir, "drover-agent-ca.pem"),
		"-client-cert", filepath.Join(dir, "global-cli-drover.pem"),
		"-client-key", filepath.Join(dir, "global-cli-drover-key.pem"), job)
	if r.code != 0 {
		t.Fatalf("job run over HTTPS: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	alloc := srv.waitAlloc("hello", "complete")
	logs := runCLI(t, append(tlsEnv, "DROVER_ADDR="+srv.addr), "alloc", "logs", alloc.ID)
	if logs.code != 0 || !strings.Contains(logs.stdout, "hello over tls") {
		t.Fatalf("alloc logs over HTTPS: exit %d: %q %q", logs.code, logs.stdout, logs.stderr)
	}
	keys := runCLI(t, append(tlsEnv, "DROVER_ADDR="+cl.addr), "operator", "gossip", "keyring", "-list")
	if keys.code != 0 || !strings.Contains(keys.stdout, key) {
		t.Fatalf("keyring -list: exit %d: %q %q", keys.code, keys.stdout, keys.stderr)
	}

	// Plain HTTP to the HTTPS port is not served.
	if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/jobs", sp[0])); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain http:// answered 200: %s", body)
		}
	}
	if r := runCLI(t, []string{"DROVER_ADDR=" + fmt.Sprintf("http://127.0.0.1:%d", sp[0])}, "job", "status", "hello"); r.code == 0 {
		t.Errorf("the CLI over plain http:// succeeded: %s", r.stdout)
	}
	// Nor plaintext RPC: the server closes the connection.
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", sp[1]), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte{0x01, 0x80})
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Error("a plaintext RPC connection got an answer")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("a plaintext RPC connection was left open")
	}
	// The log line travels through the agent's output pipe: it may
	// arrive after the connection closed.
	waitFor(t, 10*time.Second, "the server to log the refused plaintext connection", func() bool {
		return strings.Contains(srv.logs.String(), "refused a plaintext connection")
	})
}

// encryptedServerHCL is a server-only agent bootstrapping alone, data
// dir dir/server-1, gossip encrypted with key.
func encryptedServerHCL(dir string, ports []int, key string) string {
	return fmt.Sprintf(`
name      = "server-1"
data_dir  = %q
bind_addr = "127.0.0.1"
log_level = "DEBUG"
ports {
  http = %d
  rpc  = %d
  serf = %d
}
server {
  enabled          = true
  bootstrap_expect = 1
  encrypt          = %q
}
`, filepath.Join(dir, "server-1"), ports[0], ports[1], ports[2], key)
}

func appendFile(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

// cliHTTPSClient trusts dir's CA and presents its cli certificate.
func cliHTTPSClient(t *testing.T, dir string) *http.Client {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(dir, "drover-agent-ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "global-cli-drover.pem"), filepath.Join(dir, "global-cli-drover-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}},
	}}
}
