package agent

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/cli"
)

// freePort returns a loopback port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestAgentRefusesDamagedRaftStore: `drover agent` with a server whose
// raft.db is not a BoltDB file any more exits 1 with an error naming
// the file and the recovery steps; it does not panic.
func TestAgentRefusesDamagedRaftStore(t *testing.T) {
	dir := t.TempDir()
	raftDB := filepath.Join(dir, "server", "raft", "raft.db")
	if err := os.MkdirAll(filepath.Dir(raftDB), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(raftDB, []byte(strings.Repeat("not a bolt file ", 4096)), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "agent.hcl")
	hcl := fmt.Sprintf(`data_dir = %q
log_level = "ERROR"
ports {
  http = %d
  rpc  = %d
  serf = %d
}
server {
  enabled          = true
  bootstrap_expect = 1
}
`, dir, freePort(t), freePort(t), freePort(t))
	if err := os.WriteFile(conf, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	ui := cli.NewMockUi()
	c := &Command{Ui: ui, LogOutput: io.Discard}
	if code := c.Run([]string{"-config=" + conf}); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	msg := ui.ErrorWriter.String()
	t.Logf("agent: %s", msg)
	for _, want := range []string{raftDB, "drover operator snapshot restore", "fresh follower"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
}
