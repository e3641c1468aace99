package agent

import (
	"fmt"
	"math"

	"github.com/droverhq/drover/structs"
)

// ArtifactConfig is the client's artifact block, in Nomad's names: the
// bounds of each artifact download (defaults 1GiB and 30m).
//
//	artifact {
//	  http_max_size     = "1GiB"
//	  http_read_timeout = "30m"
//	}
type ArtifactConfig struct {
	HTTPMaxSize     string `hcl:"http_max_size,optional"`
	HTTPReadTimeout string `hcl:"http_read_timeout,optional"`
}

// maxSize returns the size bound in bytes (0: the default).
func (a *ArtifactConfig) maxSize() (int64, error) {
	if a == nil || a.HTTPMaxSize == "" {
		return 0, nil
	}
	n, err := structs.ParseBytes(a.HTTPMaxSize)
	if err != nil || n == 0 || n > math.MaxInt64 {
		return 0, fmt.Errorf("agent config: client.artifact.http_max_size %q: want a positive size such as \"1GiB\"", a.HTTPMaxSize)
	}
	return int64(n), nil
}

// validateArtifact checks the merged block.
func (c *ClientConfig) validateArtifact() []error {
	if c.Artifact == nil {
		return nil
	}
	var errs []error
	if _, err := c.Artifact.maxSize(); err != nil {
		errs = append(errs, err)
	}
	if _, err := positiveDuration(c.Artifact.HTTPReadTimeout); err != nil {
		errs = append(errs, fmt.Errorf("agent config: client.artifact.http_read_timeout: %w", err))
	}
	return errs
}

// artifactLimits returns the bounds for the client (Validate checked
// them; zero keeps the defaults).
func (c *ClientConfig) artifactLimits() (maxSize int64, timeout string) {
	if c.Artifact == nil {
		return 0, ""
	}
	n, _ := c.Artifact.maxSize()
	return n, c.Artifact.HTTPReadTimeout
}
