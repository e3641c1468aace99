package allocrunner

import (
	"context"
	"errors"
)

// fetchArtifacts downloads the task's artifacts into its directory.
func (tr *taskRunner) fetchArtifacts(ctx context.Context, taskDir string) error {
	if len(tr.task.Artifacts) == 0 {
		return nil
	}
	return unrecoverable(errors.New("artifact blocks are not supported by Drover yet"))
}
