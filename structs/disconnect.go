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

// errDisconnectUnsupported explains what Drover does instead.
const errDisconnectUnsupported = "not supported yet: Drover marks the allocations of a node that misses its heartbeats lost and replaces them at once"

// disconnectSupported refuses settings that would need allocations to
// wait out a disconnect ("unknown" allocations), which Drover does not
// have yet. What keeps Drover's behaviour (lost at once, replaced) is
// accepted.
func (tg *TaskGroup) disconnectSupported() error {
	if m := tg.MaxClientDisconnect; m != nil && *m > 0 {
		return fmt.Errorf("max_client_disconnect: %s", errDisconnectUnsupported)
	}
	d := tg.Disconnect
	switch {
	case d == nil:
	case d.LostAfter > 0:
		return fmt.Errorf("disconnect: lost_after: %s", errDisconnectUnsupported)
	case d.StopOnClientAfter != nil:
		return fmt.Errorf("disconnect: stop_on_client_after: %s", errDisconnectUnsupported)
	case d.Replace != nil && !*d.Replace:
		return fmt.Errorf("disconnect: replace = false: %s", errDisconnectUnsupported)
	}
	return nil
}
