package structs

import (
	"errors"
	"fmt"
)

// Ephemeral disk bounds, in MB (Nomad's minimum is 10).
const (
	EphemeralDiskMinMB     = 10
	EphemeralDiskMaxMB     = 1 << 30 // 1 PiB
	EphemeralDiskDefaultMB = 300
)

// EphemeralDisk is a group's ephemeral_disk block (Nomad's): the disk
// its allocation dir may use, counted against the node's by the
// scheduler. Sticky makes an updated allocation placed on the same node
// take its previous allocation's alloc/data dir. Migrate (copying the
// data to another node) is not supported.
type EphemeralDisk struct {
	Sticky  bool
	SizeMB  int
	Migrate bool
}

// DefaultEphemeralDisk is what a group without the block gets.
func DefaultEphemeralDisk() *EphemeralDisk {
	return &EphemeralDisk{SizeMB: EphemeralDiskDefaultMB}
}

// Copy returns a copy of the disk.
func (d *EphemeralDisk) Copy() *EphemeralDisk {
	if d == nil {
		return nil
	}
	c := *d
	return &c
}

// Validate checks the size and refuses migrate.
func (d *EphemeralDisk) Validate() error {
	if d == nil {
		return nil
	}
	var errs []error
	if d.SizeMB < EphemeralDiskMinMB || d.SizeMB > EphemeralDiskMaxMB {
		errs = append(errs, fmt.Errorf("ephemeral_disk: size %d MB must be between %d and %d", d.SizeMB, EphemeralDiskMinMB, EphemeralDiskMaxMB))
	}
	if d.Migrate {
		errs = append(errs, errors.New("ephemeral_disk: migrate is not supported: Drover does not copy allocation data between nodes (sticky keeps it on the same node)"))
	}
	return errors.Join(errs...)
}

// DiskMB is the disk the group's allocation asks for: its ephemeral
// disk's size, or 0 without one.
func (tg *TaskGroup) DiskMB() int {
	if tg == nil || tg.EphemeralDisk == nil {
		return 0
	}
	return tg.EphemeralDisk.SizeMB
}

// NodeDiskResources is the disk a node offers ephemeral disks (Nomad's
// NodeResources.Disk): the free space of the client's data dir when it
// registered, in MB.
type NodeDiskResources struct {
	DiskMB int64
}

// Fits reports whether ephemeral disks of usedMB fit; a node that
// reports no disk (0) is not counted against.
func (d NodeDiskResources) Fits(usedMB int64) bool {
	return d.DiskMB <= 0 || usedMB <= d.DiskMB
}
