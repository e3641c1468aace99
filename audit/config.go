package audit

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// Defaults for the zero fields of Config.
const (
	DefaultRotateBytes    = 100 << 20 // 100 MiB
	DefaultRotateDuration = 24 * time.Hour
	DefaultRotateMaxFiles = 10
)

// Config is the audit log's settings; it mirrors the agent's block:
//
//	audit {
//	  enabled          = true
//	  path             = "/var/lib/drover/audit/audit.log"
//	  rotate_bytes     = 104857600
//	  rotate_duration  = "24h"
//	  rotate_max_files = 10
//	}
//
// A zero field takes its default; a negative one is an error.
type Config struct {
	Path           string        // the live file; archives go beside it
	RotateBytes    int64         // rotate before a line would take the file past this
	RotateDuration time.Duration // rotate once the file has been open this long
	RotateMaxFiles int           // archives kept; the oldest beyond this are deleted
}

// withDefaults checks c and fills its zero fields.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.Path == "" {
		errs = append(errs, errors.New("audit: Path is empty"))
	}
	if c.RotateBytes < 0 {
		errs = append(errs, fmt.Errorf("audit: RotateBytes %d: must not be negative", c.RotateBytes))
	}
	if c.RotateDuration < 0 {
		errs = append(errs, fmt.Errorf("audit: RotateDuration %s: must not be negative", c.RotateDuration))
	}
	if c.RotateMaxFiles < 0 {
		errs = append(errs, fmt.Errorf("audit: RotateMaxFiles %d: must not be negative", c.RotateMaxFiles))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	if c.RotateBytes == 0 {
		c.RotateBytes = DefaultRotateBytes
	}
	if c.RotateDuration == 0 {
		c.RotateDuration = DefaultRotateDuration
	}
	if c.RotateMaxFiles == 0 {
		c.RotateMaxFiles = DefaultRotateMaxFiles
	}
	return c, nil
}

// HCL is the agent configuration's audit block, for the agent's config
// struct to embed (`hcl:"audit,block"`).
type HCL struct {
	Enabled        bool   `hcl:"enabled,optional"`
	Path           string `hcl:"path,optional"`
	RotateBytes    int64  `hcl:"rotate_bytes,optional"`
	RotateDuration string `hcl:"rotate_duration,optional"`
	RotateMaxFiles int    `hcl:"rotate_max_files,optional"`
}

// Config checks the block and turns it into a Config with defaults filled
// in; the path defaults to <dataDir>/audit/audit.log. Errors name the
// block's fields (audit.rotate_duration, ...). Enabled is the caller's to
// act on: Config does not look at it.
func (h *HCL) Config(dataDir string) (Config, error) {
	var errs []error
	path := h.Path
	if path == "" && dataDir != "" {
		path = filepath.Join(dataDir, "audit", "audit.log")
	}
	if path == "" {
		errs = append(errs, errors.New("audit.path: empty, and no data_dir to default it from"))
	}
	if h.RotateBytes < 0 {
		errs = append(errs, fmt.Errorf("audit.rotate_bytes %d: must not be negative", h.RotateBytes))
	}
	var dur time.Duration
	if h.RotateDuration != "" {
		d, err := time.ParseDuration(h.RotateDuration)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("audit.rotate_duration %q: %w", h.RotateDuration, err))
		case d < 0:
			errs = append(errs, fmt.Errorf("audit.rotate_duration %q: must not be negative", h.RotateDuration))
		}
		dur = d
	}
	if h.RotateMaxFiles < 0 {
		errs = append(errs, fmt.Errorf("audit.rotate_max_files %d: must not be negative", h.RotateMaxFiles))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return Config{Path: path, RotateBytes: h.RotateBytes, RotateDuration: dur, RotateMaxFiles: h.RotateMaxFiles}.withDefaults()
}
