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
	cfg, err := Configuration(s)
	if err != nil {
		return "", err
	}
	return cfg.Algorithm(), nil
}

// Configuration returns the operator's scheduler configuration when s is
// a SchedulerConfigReader, else the default one.
func Configuration(s State) (*structs.SchedulerConfiguration, error) {
	r, ok := s.(SchedulerConfigReader)
	if !ok {
		return structs.DefaultSchedulerConfiguration(), nil
	}
	cfg, err := r.SchedulerConfig()
	if err != nil {
		return nil, fmt.Errorf("read scheduler configuration: %w", err)
	}
	return cfg, nil
}
