//go:build !linux

package exec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

var (
	_ drivers.Driver = (*Driver)(nil)
	_ drivers.Execer = (*Driver)(nil)
)

// errUnsupported is why exec cannot run tasks off Linux.
var errUnsupported = errors.New("cgroups and namespaces need Linux")

// Driver is the exec driver; off Linux it runs nothing.
type Driver struct{ cfg Config }

// New returns an exec driver that reports itself unusable.
func New(_ hclog.Logger, cfg Config) *Driver { return &Driver{cfg: cfg} }

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// Fingerprint implements drivers.Driver.
func (d *Driver) Fingerprint(context.Context) *structs.DriverInfo {
	return &structs.DriverInfo{HealthDescription: "exec: " + errUnsupported.Error()}
}

// Start implements drivers.Driver.
func (d *Driver) Start(context.Context, *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	return nil, fmt.Errorf("exec driver: isolation unavailable: %w", errUnsupported)
}

// Wait implements drivers.Driver.
func (d *Driver) Wait(_ context.Context, id string) (<-chan *drivers.ExitResult, error) {
	return nil, fmt.Errorf("task %s: %w", id, drivers.ErrTaskNotFound)
}

// Stop implements drivers.Driver.
func (d *Driver) Stop(id string, _ time.Duration, _ string) error {
	return fmt.Errorf("task %s: %w", id, drivers.ErrTaskNotFound)
}

// Destroy implements drivers.Driver.
func (d *Driver) Destroy(id string) error {
	return fmt.Errorf("task %s: %w", id, drivers.ErrTaskNotFound)
}

// ExecTask implements drivers.Execer.
func (d *Driver) ExecTask(_ context.Context, id string, _ *drivers.ExecOptions) (*drivers.ExecResult, error) {
	return nil, fmt.Errorf("task %s: %w", id, drivers.ErrTaskNotFound)
}
