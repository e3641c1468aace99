package scheduler

import (
	"fmt"

	"github.com/droverhq/drover/structs"
)

// SchedulerConfigReader is the optional part of a State that holds the
// operator's scheduler configuration (GET/PUT
// /v1/operator/scheduler/configuration). *state.StateSnapshot satisfies
// it; a State without it (a test fake) means the default configuration.
type SchedulerConfigReader interface {
	// SchedulerConfig returns the configuration the operator set, or the
	// default one; never nil without an error.
	SchedulerConfig() (*structs.SchedulerConfiguration, error)
}

// ConfiguredAlgorithm returns the ranking algorithm to place with: the
// operator's choice when s is a SchedulerConfigReader, else
// structs.DefaultSchedulerAlgorithm.
func ConfiguredAlgorithm(s State) (string, error) {
	r, ok := s.(SchedulerConfigReader)
	if !ok {
		return structs.DefaultSchedulerAlgorithm, nil
	}
	cfg, err := r.SchedulerConfig()
	if err != nil {
		return "", fmt.Errorf("read scheduler configuration: %w", err)
	}
	return cfg.Algorithm(), nil
}
