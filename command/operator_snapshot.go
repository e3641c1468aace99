package command

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/server/snapshot"
)

// OperatorSnapshotSaveCommand is `drover operator snapshot save`.
type OperatorSnapshotSaveCommand struct{ Meta }

func (c *OperatorSnapshotSaveCommand) Synopsis() string {
	return "Save a snapshot of the cluster's state to a file"
}

func (c *OperatorSnapshotSaveCommand) Help() string {
	return helpText(`
Usage: drover operator snapshot save [options] <file>

  Saves a point-in-time snapshot of the cluster's state (jobs,
  allocations, nodes, evaluations, settings) to <file>. The leader takes
  it after every write acknowledged before the request. The file is a
  gzip-compressed tar with a SHA-256 checksum of its contents; it is
  verified before it is written under its name, so a file that exists is
  a complete snapshot.`, `
Save Options:

  -stale
    Let any server answer from its own state, which may lag the leader
    (for a cluster without a leader).`)
}

func (c *OperatorSnapshotSaveCommand) Run(args []string) int {
	var stale bool
	fs := c.flagSet("operator snapshot save")
	fs.BoolVar(&stale, "stale", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("operator snapshot save", "one argument, the file to write")
	}
	path := args[0]
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	body, _, err := client.Operator().SnapshotSave(ctx, &api.QueryOptions{AllowStale: stale})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error saving the snapshot: %s", err))
		return exitError
	}
	defer body.Close()
	v, err := writeVerified(path, body)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error saving the snapshot: %s", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("State file written to %s (index %d, term %d, %s of state)",
		path, v.Meta.Index, v.Meta.Term, formatSize(v.Meta.Size)))
	return 0
}

// writeVerified copies the archive in r to a temporary file next to path,
// verifies it, and renames it to path.
func writeVerified(path string, r io.Reader) (*snapshot.Verified, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".part-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	_, err = io.Copy(tmp, r)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	v, err := verifyFile(tmp.Name())
	if err != nil {
		return nil, fmt.Errorf("the snapshot received is not intact: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	return v, nil
}

// verifyFile checks the archive at path.
func verifyFile(path string) (*snapshot.Verified, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return snapshot.Read(f, io.Discard)
}

// OperatorSnapshotRestoreCommand is `drover operator snapshot restore`.
type OperatorSnapshotRestoreCommand struct{ Meta }

func (c *OperatorSnapshotRestoreCommand) Synopsis() string {
	return "Replace the cluster's state with a snapshot file"
}

func (c *OperatorSnapshotRestoreCommand) Help() string {
	return helpText(`
Usage: drover operator snapshot restore [options] <file>

  Replaces the cluster's state with the snapshot in <file>, saved by
  'drover operator snapshot save'. The file's checksums are verified here
  and again by the leader; a damaged or truncated file is refused and
  nothing changes. Meant for disaster recovery into a fresh cluster:
  everything written since the snapshot was saved is lost.`, "")
}

func (c *OperatorSnapshotRestoreCommand) Run(args []string) int {
	fs := c.flagSet("operator snapshot restore")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("operator snapshot restore", "one argument, the snapshot file")
	}
	path := args[0]
	if _, err := verifyFile(path); err != nil {
		c.Ui.Error(fmt.Sprintf("Error verifying snapshot file %s: %s", path, err))
		c.Ui.Error("Nothing was restored.")
		return exitError
	}
	f, err := os.Open(path)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error opening snapshot file: %s", err))
		return exitError
	}
	defer f.Close()
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	resp, _, err := client.Operator().SnapshotRestore(ctx, f, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error restoring the snapshot: %s", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Snapshot restored (saved at index %d, term %d); the cluster is now at index %d",
		resp.Meta.Index, resp.Meta.Term, resp.Index))
	return 0
}

// OperatorSnapshotInspectCommand is `drover operator snapshot inspect`.
type OperatorSnapshotInspectCommand struct{ Meta }

func (c *OperatorSnapshotInspectCommand) Synopsis() string {
	return "Describe a snapshot file and verify its checksums"
}

func (c *OperatorSnapshotInspectCommand) Help() string {
	return `Usage: drover operator snapshot inspect [options] <file>

  Verifies the snapshot file's checksums and prints its Raft index, term
  and size. Talks to no agent. Exits 1 when the file is damaged.

Inspect Options:

  -json
    Print the description as JSON.`
}

func (c *OperatorSnapshotInspectCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("operator snapshot inspect")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("operator snapshot inspect", "one argument, the snapshot file")
	}
	v, err := verifyFile(args[0])
	if err != nil {
		if errors.Is(err, snapshot.ErrDamaged) {
			c.Ui.Error(fmt.Sprintf("Checksum FAILED: %s: %s", args[0], err))
		} else {
			c.Ui.Error(fmt.Sprintf("Error reading snapshot file: %s", err))
		}
		return exitError
	}
	if asJSON {
		return c.outputJSON(map[string]any{"Meta": v.Meta, "StateSHA256": v.StateSHA256, "ChecksumOK": true})
	}
	m := v.Meta
	c.Ui.Output(formatKV([]kv{
		{"ID", m.ID},
		{"Index", strconv.FormatUint(m.Index, 10)},
		{"Term", strconv.FormatUint(m.Term, 10)},
		{"Size", formatSize(m.Size)},
		{"Created", m.Created.Local().Format(time.RFC3339)},
		{"Format", strconv.Itoa(m.FormatVersion)},
		{"State SHA-256", v.StateSHA256},
		{"Checksum", "OK"},
	}))
	return 0
}

// formatSize prints n bytes with a binary unit.
func formatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
