package client

import "path/filepath"

// checkpointRoot is where groups' checkpoint dirs live: the configured
// root, or in dev mode DataDir/checkpoints ("" when neither: such groups'
// tasks fail setup, saying so).
func (c *Client) checkpointRoot() string {
	switch {
	case c.cfg.CheckpointRoot != "":
		return c.cfg.CheckpointRoot
	case c.cfg.DevMode && c.cfg.DataDir != "":
		return filepath.Join(c.cfg.DataDir, "checkpoints")
	}
	return ""
}
