package structs

import (
	"errors"
	"fmt"
	"time"
)

// Disconnect reconcile options (Nomad's).
const (
	ReconcileOptionKeepOriginal    = "keep_original"
	ReconcileOptionKeepReplacement = "keep_replacement"
	ReconcileOptionBestScore       = "best_score"
	ReconcileOptionLongestRunning  = "longest_running"
)

// maxDisconnectWindow bounds lost_after and stop_on_client_after.
const maxDisconnectWindow = 30 * 24 * time.Hour

// DisconnectStrategy is a group's disconnect block (Nomad 1.8): how
// allocations on a node that stopped heartbeating are treated.
type DisconnectStrategy struct {
	// LostAfter is how long the allocations stay "unknown" before they
	// are lost (0: lost at once).
	LostAfter time.Duration
	// StopOnClientAfter is how long a disconnected client keeps them
	// running (0: it does not stop them).
	StopOnClientAfter *time.Duration
	// Replace: place replacements while unknown (nil: true).
	Replace *bool
	// Reconcile picks which to keep when the node returns.
	Reconcile string
}

// Copy returns a deep copy.
func (d *DisconnectStrategy) Copy() *DisconnectStrategy {
	if d == nil {
		return nil
	}
	c := *d
	if d.StopOnClientAfter != nil {
		v := *d.StopOnClientAfter
		c.StopOnClientAfter = &v
	}
	if d.Replace != nil {
		v := *d.Replace
		c.Replace = &v
	}
	return &c
}

// Canonicalize fills Nomad's defaults: replace true, reconcile
// best_score.
func (d *DisconnectStrategy) Canonicalize() {
	if d == nil {
		return
	}
	if d.Replace == nil {
		v := true
		d.Replace = &v
	}
	if d.Reconcile == "" {
		d.Reconcile = ReconcileOptionBestScore
	}
}

// Validate checks the windows and the reconcile option.
func (d *DisconnectStrategy) Validate() error {
	if d == nil {
		return nil
	}
	var errs []error
	if d.LostAfter < 0 || d.LostAfter > maxDisconnectWindow {
		errs = append(errs, fmt.Errorf("disconnect: lost_after %v must be between 0 and %v", d.LostAfter, maxDisconnectWindow))
	}
	if s := d.StopOnClientAfter; s != nil && (*s < 0 || *s > maxDisconnectWindow) {
		errs = append(errs, fmt.Errorf("disconnect: stop_on_client_after %v must be between 0 and %v", *s, maxDisconnectWindow))
	}
	if d.StopOnClientAfter != nil && d.LostAfter > 0 {
		errs = append(errs, errors.New("disconnect: lost_after and stop_on_client_after cannot both be set"))
	}
	switch d.Reconcile {
	case "", ReconcileOptionKeepOriginal, ReconcileOptionKeepReplacement, ReconcileOptionBestScore, ReconcileOptionLongestRunning:
	default:
		errs = append(errs, fmt.Errorf("disconnect: reconcile %q is not one of keep_original, keep_replacement, best_score, longest_running", d.Reconcile))
	}
	return errors.Join(errs...)
}

// validateDisconnect checks max_client_disconnect and the disconnect
// block together, and refuses what Drover does not do yet.
func (tg *TaskGroup) validateDisconnect() error {
	var errs []error
	if m := tg.MaxClientDisconnect; m != nil {
		if *m < 0 || *m > maxDisconnectWindow {
			errs = append(errs, fmt.Errorf("max_client_disconnect %v must be between 0 and %v", *m, maxDisconnectWindow))
		}
		if tg.Disconnect != nil {
			errs = append(errs, errors.New("max_client_disconnect and the disconnect block cannot both be set (use disconnect.lost_after)"))
		}
	}
	if err := tg.Disconnect.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return tg.disconnectSupported()
}

// AllocClientStatusUnknown is the client status of an allocation whose
// node missed its heartbeats, within its group's disconnect window: it
// may still run, and is neither lost nor stopped yet (Nomad's).
const AllocClientStatusUnknown = "unknown"

// DescNodeDisconnected is the client description of such an allocation.
const DescNodeDisconnected = "alloc is unknown since its node is disconnected"

// DisconnectWindow is how long the group's allocations on a node that
// missed its heartbeats stay unknown before they are lost:
// disconnect.lost_after, else max_client_disconnect; 0 for none.
func (tg *TaskGroup) DisconnectWindow() time.Duration {
	switch {
	case tg == nil:
		return 0
	case tg.Disconnect != nil && tg.Disconnect.LostAfter > 0:
		return tg.Disconnect.LostAfter
	case tg.MaxClientDisconnect != nil:
		return *tg.MaxClientDisconnect
	}
	return 0
}

// ReplaceDisconnected reports whether the group's unknown allocations
// are replaced while their node is away (disconnect.replace, default
// true).
func (tg *TaskGroup) ReplaceDisconnected() bool {
	return tg == nil || tg.Disconnect == nil || tg.Disconnect.Replace == nil || *tg.Disconnect.Replace
}

// disconnectSupported refuses what Drover does not do yet: a client
// stopping its own allocations after a while disconnected, and keeping
// the replacement (or the longest running) over the original when the
// node returns. Drover keeps the original (best_score counts as that).
func (tg *TaskGroup) disconnectSupported() error {
	d := tg.Disconnect
	switch {
	case d == nil:
	case d.StopOnClientAfter != nil:
		return errors.New("disconnect: stop_on_client_after is not supported yet (a disconnected client keeps its allocations running)")
	case d.Reconcile == ReconcileOptionKeepReplacement || d.Reconcile == ReconcileOptionLongestRunning:
		return fmt.Errorf("disconnect: reconcile %q is not supported yet (Drover keeps the original allocation: keep_original, best_score)", d.Reconcile)
	}
	return nil
}
