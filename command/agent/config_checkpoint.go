package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// validateCheckpointRoot checks client.checkpoint_root, where groups'
// checkpoint dirs live (`client { checkpoint_root = "/srv/ckpt" }`): an
// absolute path to a directory that exists. Unset is fine: a -dev agent
// uses its data dir, and elsewhere a group with a checkpoint block fails
// at task setup, saying so.
func (c *ClientConfig) validateCheckpointRoot() []error {
	root := c.CheckpointRoot
	if root == "" {
		return nil
	}
	const where = "agent config: client.checkpoint_root"
	if !filepath.IsAbs(root) {
		return []error{fmt.Errorf("%s: path %q must be absolute", where, root)}
	}
	fi, err := os.Stat(root)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return []error{fmt.Errorf("%s: path %s does not exist", where, root)}
	case err != nil:
		return []error{fmt.Errorf("%s: %w", where, err)}
	case !fi.IsDir():
		return []error{fmt.Errorf("%s: path %s is not a directory", where, root)}
	}
	return nil
}

// checkpointRoot is the configured root, cleaned ("" when unset).
func (c *ClientConfig) checkpointRoot() string {
	if c.CheckpointRoot == "" {
		return ""
	}
	return filepath.Clean(c.CheckpointRoot)
}
