package structs

import (
	"errors"
	"fmt"
	"time"
)

// DefaultGangTimeout is how long a waiting gang holds its reservation
// when its block sets no timeout.
const DefaultGangTimeout = 10 * time.Minute

// Gang makes a group's placement all or nothing (Drover's extension,
// `group { gang { min = 4  timeout = "10m" } }`): a plan places at least
// Min of the group's allocations, counting those already running, or
// none of them, and the plan applier commits all of a gang's placements
// or none. Groups of one job whose gangs share a Name are one gang: each
// must reach its Min in the same plan. While a gang waits it holds the
// nodes it would use (structs.Reservation), so a stream of small jobs
// cannot starve it; Timeout after the reservation was made, it stops
// holding them and waits without.
type Gang struct {
	// Name groups gangs of several groups of one job ("" is the group's
	// name: a gang of its own).
	Name    string
	Min     int
	Timeout time.Duration
	// Network keeps the gang within one network domain (gang_network.go).
	Network *GangNetwork
}

// Copy returns a copy of g.
func (g *Gang) Copy() *Gang {
	if g == nil {
		return nil
	}
	c := *g
	c.Network = g.Network.Copy()
	return &c
}

// Canonicalize fills the defaults: the timeout.
func (g *Gang) Canonicalize() {
	if g != nil && g.Timeout == 0 {
		g.Timeout = DefaultGangTimeout
	}
	if g != nil {
		g.Network.Canonicalize()
	}
}

// Validate checks g against its group's count.
func (g *Gang) Validate(count int) error {
	if g == nil {
		return nil
	}
	var errs []error
	if g.Min < 1 {
		errs = append(errs, fmt.Errorf("gang min %d must be at least 1", g.Min))
	}
	if g.Min > count {
		errs = append(errs, fmt.Errorf("gang min %d exceeds the group's count %d", g.Min, count))
	}
	if g.Timeout < 0 {
		errs = append(errs, errors.New("gang timeout must not be negative"))
	}
	if err := g.Network.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// GangName is the name of the group's gang, "" when it has none.
func (tg *TaskGroup) GangName() string {
	switch {
	case tg.Gang == nil:
		return ""
	case tg.Gang.Name != "":
		return tg.Gang.Name
	}
	return tg.Name
}
