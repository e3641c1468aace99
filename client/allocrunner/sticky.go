package allocrunner

import (
	"fmt"
	"path/filepath"

	"github.com/droverhq/drover/structs"
)

// TaskStickyData is the event recorded on every task when a sticky
// ephemeral disk's data came from the previous allocation.
const TaskStickyData = "Sticky Data"

// takeStickyData moves the previous allocation's shared data dir
// (alloc/data) into this one's, for a group with a sticky ephemeral
// disk whose replacement landed on the same node. It first waits for the
// previous allocation's tasks to be dead (prevDone, nil when this client
// does not run it), or for a kill of this one. A previous allocation
// whose dir is gone (collected, or it ran on another node) leaves the
// data dir empty: data is never copied between nodes.
func (ar *AllocRunner) takeStickyData(tg *structs.TaskGroup, prevID string, prevDone <-chan struct{}) (moved int, err error) {
	if tg.EphemeralDisk == nil || !tg.EphemeralDisk.Sticky || prevID == "" || prevID == ar.id {
		return 0, nil
	}
	if !structs.IsUUID(prevID) {
		return 0, fmt.Errorf("previous allocation %q is not an allocation ID", prevID)
	}
	if prevDone != nil {
		select {
		case <-prevDone:
		case <-ar.killedCh():
			return 0, nil
		case <-ar.detachCh:
			return 0, nil
		}
	}
	prevDir := AllocDir(filepath.Dir(filepath.Dir(ar.allocDir)), prevID)
	moved, err = moveDataEntries(prevDir, ar.allocDir)
	if err != nil {
		return moved, fmt.Errorf("sticky data of %s: %w", prevID, err)
	}
	return moved, nil
}

// killedCh is closed once the allocation is stopped: the kill channel
// of its first task that a stop kills (not a poststop one).
func (ar *AllocRunner) killedCh() <-chan struct{} {
	for _, tr := range ar.tasks {
		if !tr.task.IsHook(structs.TaskLifecycleHookPoststop) {
			return tr.killCh
		}
	}
	return nil
}

// migrateSticky takes a sticky ephemeral disk's data from the previous
// allocation (takeStickyData) and records it on every task.
func (ar *AllocRunner) migrateSticky() error {
	alloc := ar.Alloc()
	tg, err := taskGroup(alloc)
	if err != nil {
		return nil // prepare reported it
	}
	moved, err := ar.takeStickyData(tg, alloc.PreviousAllocation, ar.prevDone)
	if err != nil || moved == 0 {
		return err
	}
	msg := fmt.Sprintf("Moved %d entries of alloc/data from previous allocation %s", moved, alloc.PreviousAllocation)
	for _, tr := range ar.tasks {
		tr.emit(&structs.TaskEvent{Type: TaskStickyData, Message: msg}, nil)
	}
	return nil
}
