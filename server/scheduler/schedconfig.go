package scheduler

import (
	"fmt"

	"github.com/droverhq/drover/structs"
)

// ConfiguredAlgorithm returns the ranking algorithm to place with: the
// operator's choice, or structs.DefaultSchedulerAlgorithm when none was
// made.
func ConfiguredAlgorithm(s ClusterState) (string, error) {
	cfg, err := Configuration(s)
	if err != nil {
		return "", err
	}
	return cfg.Algorithm(), nil
}

// Configuration returns the operator's scheduler configuration (GET/PUT
// /v1/operator/scheduler/configuration), or the default one.
func Configuration(s ClusterState) (*structs.SchedulerConfiguration, error) {
	cfg, err := s.SchedulerConfig()
	if err != nil {
		return nil, fmt.Errorf("read scheduler configuration: %w", err)
	}
	if cfg == nil {
		return structs.DefaultSchedulerConfiguration(), nil
	}
	return cfg, nil
}
