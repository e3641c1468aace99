package feasible

import (
	"fmt"
	"slices"
	"strings"

	"github.com/droverhq/drover/structs"
)

// Filter reasons that are not a constraint's text.
const (
	ReasonNodeNotReady      = "node not ready"
	ReasonMissingDatacenter = "missing datacenter"
)

// Filter judges a node on facts that do not change while a plan is built,
// so a Stack runs it once per node and task group. A rejection carries
// the reason recorded in AllocMetric.ConstraintFiltered.
type Filter interface {
	Filter(n *structs.Node) (ok bool, reason string)
}

// CandidateFilter judges a node given the allocations proposed on it, so
// it runs for every placement. A rejection is a filter, not exhaustion:
// more capacity would not help.
type CandidateFilter interface {
	FilterCandidate(c *Candidate) (ok bool, reason string)
}

// ReadyFilter rejects nodes that are not ready, are draining or are
// ineligible for scheduling.
type ReadyFilter struct{}

// Filter implements Filter.
func (ReadyFilter) Filter(n *structs.Node) (bool, string) {
	if !n.Ready() {
		return false, ReasonNodeNotReady
	}
	return true, ""
}

// DatacenterFilter rejects nodes outside the job's datacenters. A
// datacenter ending in "*" matches by prefix ("us-*", "*").
type DatacenterFilter struct {
	datacenters []string
}

// NewDatacenterFilter returns a filter for the datacenters given.
func NewDatacenterFilter(datacenters []string) *DatacenterFilter {
	return &DatacenterFilter{datacenters: datacenters}
}

// Filter implements Filter.
func (f *DatacenterFilter) Filter(n *structs.Node) (bool, string) {
	for _, dc := range f.datacenters {
		if structs.MatchDatacenter(dc, n.Datacenter) {
			return true, ""
		}
	}
	return false, ReasonMissingDatacenter
}

// DriverFilter rejects nodes missing a task driver: the driver must be
// detected and healthy, or, on a node that reports no such driver info,
// its attribute "driver.<name>" must be "1" or "true".
type DriverFilter struct {
	drivers []string
}

// NewDriverFilter returns a filter for the drivers given.
func NewDriverFilter(drivers []string) *DriverFilter {
	return &DriverFilter{drivers: drivers}
}

// Filter implements Filter.
func (f *DriverFilter) Filter(n *structs.Node) (bool, string) {
	var missing []string
	for _, d := range f.drivers {
		if !driverAvailable(n, d) {
			missing = append(missing, d)
		}
	}
	switch len(missing) {
	case 0:
		return true, ""
	case 1:
		return false, fmt.Sprintf("driver %s not available", missing[0])
	}
	slices.Sort(missing)
	return false, fmt.Sprintf("drivers %s not available", strings.Join(missing, ", "))
}

func driverAvailable(n *structs.Node, driver string) bool {
	if info, ok := n.Drivers[driver]; ok && info != nil {
		return info.Detected && info.Healthy
	}
	switch n.Attributes["driver."+driver] {
	case "1", "true":
		return true
	}
	return false
}

// ConstraintFilter rejects nodes that fail one of the job's, group's or
// tasks' attribute constraints; the reason is the constraint as written.
// distinct_hosts and distinct_property are left to DistinctHostsFilter and
// DistinctPropertyFilter.
type ConstraintFilter struct {
	constraints []*structs.Constraint
	checker     *Checker
}

// NewConstraintFilter returns a filter for the constraints given.
func NewConstraintFilter(constraints []*structs.Constraint, checker *Checker) *ConstraintFilter {
	var own []*structs.Constraint
	for _, c := range constraints {
		if c.Operand != structs.ConstraintDistinctHosts && c.Operand != structs.ConstraintDistinctProperty {
			own = append(own, c)
		}
	}
	return &ConstraintFilter{constraints: own, checker: checker}
}

// Filter implements Filter.
func (f *ConstraintFilter) Filter(n *structs.Node) (bool, string) {
	if len(f.constraints) == 0 {
		return true, ""
	}
	resolve := NodeResolver(n)
	for _, c := range f.constraints {
		if !f.checker.Holds(c.LTarget, c.Operand, c.RTarget, resolve) {
			return false, c.String()
		}
	}
	return true, ""
}

// DeviceConstraintFilter rejects nodes where some device request matches
// no instance at all, by name or by its constraints. Whether enough
// matching instances are free is DeviceFit's question.
type DeviceConstraintFilter struct {
	devices *deviceMatcher
}

// Filter implements Filter.
func (f *DeviceConstraintFilter) Filter(n *structs.Node) (bool, string) {
	if len(f.devices.asks) == 0 {
		return true, ""
	}
	if m := f.devices.match(n); m.reason != "" {
		return false, m.reason
	}
	return true, ""
}

// DistinctHostsFilter rejects nodes that already hold (or are proposed to
// hold) an allocation of the same job (job-level distinct_hosts) or of
// the same group (group-level).
type DistinctHostsFilter struct {
	namespace, jobID string
	group            string // "" when the constraint is job-wide
	reason           string
}

// NewDistinctHostsFilter returns the filter for job and group, or nil
// when neither asks for distinct hosts.
func NewDistinctHostsFilter(job *structs.Job, tg *structs.TaskGroup) *DistinctHostsFilter {
	if c := distinctHosts(job.Constraints); c != nil {
		return &DistinctHostsFilter{namespace: job.Namespace, jobID: job.ID, reason: c.String()}
	}
	if c := distinctHosts(tg.Constraints); c != nil {
		return &DistinctHostsFilter{namespace: job.Namespace, jobID: job.ID, group: tg.Name, reason: c.String()}
	}
	return nil
}

func distinctHosts(cs []*structs.Constraint) *structs.Constraint {
	for _, c := range cs {
		if c.Operand == structs.ConstraintDistinctHosts && c.RTarget != "false" {
			return c
		}
	}
	return nil
}

// FilterCandidate implements CandidateFilter.
func (f *DistinctHostsFilter) FilterCandidate(c *Candidate) (bool, string) {
	for _, a := range c.JobAllocs {
		if a.Namespace == f.namespace && a.JobID == f.jobID && (f.group == "" || a.TaskGroup == f.group) {
			return false, f.reason
		}
	}
	return true, ""
}
