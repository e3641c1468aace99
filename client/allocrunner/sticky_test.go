package allocrunner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestStickyDataRefusesSymlinkedDataDir: a previous task that replaced
// its alloc/data with a symlink to a host dir must not make the client
// move that host dir's files into the new allocation.
func TestStickyDataRefusesSymlinkedDataDir(t *testing.T) {
	alloc := testAlloc(structs.JobTypeBatch, noRestarts, shTask("main", `test ! -e "$NOMAD_ALLOC_DIR/data/secret"`))
	alloc.Job.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 100, Sticky: true}
	alloc.PreviousAllocation = structs.GenerateUUID()
	ar, _ := newRunner(t, alloc)
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "secret"), []byte("node secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	prevShared := SharedDir(filepath.Join(filepath.Dir(ar.AllocDir()), alloc.PreviousAllocation))
	if err := os.MkdirAll(prevShared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(prevShared, "data")); err != nil {
		t.Fatal(err)
	}
	got := runToEnd(t, ar)
	if got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("status %q, want complete (the task saw no host file); %s", got.ClientStatus, describeTasks(got))
	}
	if _, err := os.Stat(filepath.Join(host, "secret")); err != nil {
		t.Errorf("the host file was moved away: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(SharedDir(ar.AllocDir()), "data", "secret")); !os.IsNotExist(err) {
		t.Errorf("the host file is in the new alloc's data dir: %v", err)
	}
}

// TestMoveDataEntriesKeepsLinksAsLinks: an entry of the data dir that is
// a symlink moves as the link; its target stays where it is.
func TestMoveDataEntriesKeepsLinksAsLinks(t *testing.T) {
	from, to, host := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{from, to} {
		if err := os.MkdirAll(filepath.Join(d, "alloc", "data"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(host, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(from, "alloc", "data", "link")); err != nil {
		t.Fatal(err)
	}
	n, err := moveDataEntries(from, to)
	if err != nil || n != 1 {
		t.Fatalf("moved %d, %v; want 1, nil", n, err)
	}
	fi, err := os.Lstat(filepath.Join(to, "alloc", "data", "link"))
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("moved entry: %v %v, want the symlink", fi, err)
	}
	if _, err := os.Stat(filepath.Join(host, "f")); err != nil {
		t.Errorf("target moved: %v", err)
	}
}

// TestPreemptMarkerDoesNotFollowLinks: the DROVER_PREEMPTED marker is
// not written through a symlink a task left in the shared dir.
func TestPreemptMarkerDoesNotFollowLinks(t *testing.T) {
	allocDir, host := t.TempDir(), t.TempDir()
	target := filepath.Join(host, "shadow")
	if err := os.WriteFile(target, []byte("root:secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(SharedDir(allocDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(SharedDir(allocDir), structs.EnvPreempted)); err != nil {
		t.Fatal(err)
	}
	if err := writeShared(allocDir, structs.EnvPreempted, []byte("1\n")); err == nil {
		t.Error("wrote through a symlink out of the shared dir")
	}
	if got, _ := os.ReadFile(target); string(got) != "root:secret\n" {
		t.Errorf("target = %q, overwritten", got)
	}
}
