package structs

import (
	"errors"
	"fmt"
	"slices"
)

// QuotaSpec caps what the allocations of the namespaces that name it hold
// together, per region. The JSON shape follows Nomad's QuotaSpec, with
// Drover's GPU dimensions in RegionLimit.
//
// A quota shared by several namespaces is one pool for all of them, as in
// Nomad.
type QuotaSpec struct {
	Name        string
	Description string
	Limits      []*QuotaLimit

	CreateIndex uint64
	ModifyIndex uint64
}

// QuotaLimit is the limit of one region.
type QuotaLimit struct {
	Region      string
	RegionLimit *RegionLimit
}

// RegionLimit is what the namespaces' non-terminal allocations may hold
// in one region in total.
//
// Each value follows Nomad's rule: 0 (or absent) means unlimited and a
// negative value means none allowed. So `gpu = 0` does not forbid GPUs;
// `gpu = -1` does.
type RegionLimit struct {
	// CPU in MHz and MemoryMB, summed over the allocations' tasks.
	CPU      int64
	MemoryMB int64
	// GPUs is a number of GPUs. A fractional GPU (a slice) counts as its
	// compute share: a slice of 25% is a quarter of a GPU.
	GPUs int64
	// GPUMemoryMB is GPU memory: the memory of each whole GPU held (from
	// its node's device group) plus each slice's memory.
	GPUMemoryMB int64
}

// Quota dimensions, as reasons and in QuotaCheck's messages.
const (
	QuotaDimCPU       = "cpu"
	QuotaDimMemory    = "memory"
	QuotaDimGPU       = "gpu"
	QuotaDimGPUMemory = "gpu_memory"
)

// Validate checks the names and limits; an error names the field and
// wraps ErrInvalid.
func (q *QuotaSpec) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("quota %q: "+format+": %w", append(append([]any{q.Name}, args...), ErrInvalid)...))
	}
	if !validObjectName.MatchString(q.Name) {
		bad("name: want 1 to 128 letters, digits or dashes")
	}
	if len(q.Description) > maxDescriptionLength {
		bad("description is %d characters, at most %d", len(q.Description), maxDescriptionLength)
	}
	if len(q.Limits) == 0 {
		bad("no limit: give at least one limit with a region")
	}
	seen := map[string]bool{}
	for i, l := range q.Limits {
		switch {
		case l == nil:
			bad("limit %d: missing", i)
		case l.Region == "":
			bad("limit %d: missing region", i)
		case seen[l.Region]:
			bad("limit %d: region %q has another limit", i, l.Region)
		case l.RegionLimit == nil:
			bad("limit %d (region %q): missing region_limit", i, l.Region)
		}
		if l != nil {
			seen[l.Region] = true
		}
	}
	return errors.Join(errs...)
}

// CheckShape returns an error wrapping ErrInvalid when the spec holds nil
// limits or region limits: input that would crash a copy or a check.
func (q *QuotaSpec) CheckShape() error {
	for i, l := range q.Limits {
		if l == nil || l.RegionLimit == nil {
			return fmt.Errorf("quota %q: limit %d: missing: %w", q.Name, i, ErrInvalid)
		}
	}
	return nil
}

// Copy returns a deep copy.
func (q *QuotaSpec) Copy() *QuotaSpec {
	if q == nil {
		return nil
	}
	c := *q
	c.Limits = make([]*QuotaLimit, len(q.Limits))
	for i, l := range q.Limits {
		c.Limits[i] = l.Copy()
	}
	if q.Limits == nil {
		c.Limits = nil
	}
	return &c
}

// Copy returns a deep copy.
func (l *QuotaLimit) Copy() *QuotaLimit {
	if l == nil {
		return nil
	}
	c := *l
	if l.RegionLimit != nil {
		rl := *l.RegionLimit
		c.RegionLimit = &rl
	}
	return &c
}

// LimitFor returns the limit of region, or nil: a quota without a limit
// for a region caps nothing there.
func (q *QuotaSpec) LimitFor(region string) *RegionLimit {
	if q == nil {
		return nil
	}
	i := slices.IndexFunc(q.Limits, func(l *QuotaLimit) bool { return l != nil && l.Region == region })
	if i < 0 {
		return nil
	}
	return q.Limits[i].RegionLimit
}

// QuotaResources is an amount of what quotas cap. GPUCompute is in
// percent of one GPU (WholeGPU is one GPU), so that slices add up
// exactly.
type QuotaResources struct {
	CPU         int64
	MemoryMB    int64
	GPUCompute  int64
	GPUMemoryMB int64
}

// Add returns r plus o.
func (r QuotaResources) Add(o QuotaResources) QuotaResources {
	return QuotaResources{r.CPU + o.CPU, r.MemoryMB + o.MemoryMB, r.GPUCompute + o.GPUCompute, r.GPUMemoryMB + o.GPUMemoryMB}
}

// Sub returns r less o.
func (r QuotaResources) Sub(o QuotaResources) QuotaResources {
	return QuotaResources{r.CPU - o.CPU, r.MemoryMB - o.MemoryMB, r.GPUCompute - o.GPUCompute, r.GPUMemoryMB - o.GPUMemoryMB}
}

// QuotaCharge is what one allocation counts against its namespace's
// quota, fixed when it started to count. The state store keeps one per
// non-terminal placed allocation.
type QuotaCharge struct {
	AllocID   string
	Namespace string
	Used      QuotaResources
}

// IsZero reports whether r holds nothing.
func (r QuotaResources) IsZero() bool { return r == QuotaResources{} }

// AllocQuotaResources returns what alloc holds against its namespace's
// quota: its tasks' CPU and memory, the compute share of its GPUs (a whole
// GPU is WholeGPU, a slice its compute, at least 1 like GPUShape) and
// their memory (a slice's MemoryMB; a whole GPU's memory from its group
// on node, none when node is nil or the group does not say). It does not
// look at the allocation's status.
func AllocQuotaResources(alloc *Allocation, node *Node) QuotaResources {
	var r QuotaResources
	if alloc == nil || alloc.AllocatedResources == nil {
		return r
	}
	for _, t := range alloc.AllocatedResources.Tasks {
		if t == nil {
			continue
		}
		r.CPU += t.Cpu.CpuShares
		r.MemoryMB += t.Memory.MemoryMB
		for _, d := range t.Devices {
			if d == nil || d.Type != "gpu" {
				continue
			}
			n := int64(len(d.DeviceIDs))
			if d.Slice() {
				r.GPUCompute += n * int64(max(d.Compute, 1))
				r.GPUMemoryMB += n * int64(d.MemoryMB)
				continue
			}
			r.GPUCompute += n * WholeGPU
			for _, id := range d.DeviceIDs {
				r.GPUMemoryMB += int64(instanceMemoryMB(node, id))
			}
		}
	}
	return r
}

// instanceMemoryMB is the memory of device instance id on node, 0 when
// unknown.
func instanceMemoryMB(node *Node, id string) uint64 {
	if node == nil {
		return 0
	}
	g, inst := node.Instance(id)
	if inst == nil {
		return 0
	}
	return g.MemoryMB()
}

// QuotaCheck reports whether used plus need fits limit (nil: no limit)
// and, when it does not, why: `quota "team-a" exhausted: gpu 2 of 2 used,
// need 1`. Only dimensions need asks for are checked, so an allocation
// without GPUs is never refused for GPUs, even over a lowered limit.
func QuotaCheck(quota string, limit *RegionLimit, used, need QuotaResources) (ok bool, reason string) {
	if limit == nil {
		return true, ""
	}
	dims := []struct {
		name              string
		limit, used, need int64
		format            func(int64) string
	}{
		{QuotaDimCPU, limit.CPU, used.CPU, need.CPU, func(v int64) string { return fmt.Sprintf("%d MHz", v) }},
		{QuotaDimMemory, limit.MemoryMB, used.MemoryMB, need.MemoryMB, formatMB},
		{QuotaDimGPU, limit.GPUs * WholeGPU, used.GPUCompute, need.GPUCompute, FormatGPUs},
		{QuotaDimGPUMemory, limit.GPUMemoryMB, used.GPUMemoryMB, need.GPUMemoryMB, formatMB},
	}
	for _, d := range dims {
		switch {
		case d.need <= 0 || d.limit == 0:
		case d.limit < 0:
			return false, fmt.Sprintf("quota %q exhausted: %s none allowed, need %s", quota, d.name, d.format(d.need))
		case d.used+d.need > d.limit:
			return false, fmt.Sprintf("quota %q exhausted: %s %s of %s used, need %s",
				quota, d.name, d.format(max(d.used, 0)), d.format(d.limit), d.format(d.need))
		}
	}
	return true, ""
}

// FormatGPUs renders a GPU compute amount in percent of one GPU as a
// number of GPUs: 200 is "2", 125 is "1.25".
func FormatGPUs(compute int64) string {
	if compute%WholeGPU == 0 {
		return fmt.Sprint(compute / WholeGPU)
	}
	return fmt.Sprintf("%.2f", float64(compute)/WholeGPU)
}

func formatMB(mb int64) string {
	if mb < 0 {
		return fmt.Sprintf("%d MiB", mb)
	}
	return FormatBytes(uint64(mb) << 20)
}

// QuotaSpecUpsertRequest creates or replaces quota specifications.
type QuotaSpecUpsertRequest struct {
	Quotas []*QuotaSpec
	WriteRequest
}

// QuotaSpecDeleteRequest deletes quota specifications by name.
type QuotaSpecDeleteRequest struct {
	Names []string
	WriteRequest
}

// QuotaSpecificRequest reads one quota specification or its usage.
type QuotaSpecificRequest struct {
	Name string
	QueryOptions
}

// SingleQuotaSpecResponse answers a QuotaSpecificRequest; Quota is nil
// when there is none of that name.
type SingleQuotaSpecResponse struct {
	Quota *QuotaSpec
	QueryMeta
}

// QuotaListRequest lists quota specifications (QueryOptions.Prefix
// filters by name).
type QuotaListRequest struct {
	QueryOptions
}

// QuotaListResponse lists quota specifications sorted by name.
type QuotaListResponse struct {
	Quotas []*QuotaSpec
	QueryMeta
}

// QuotaUsage is what the non-terminal allocations of a quota's namespaces
// hold in the answering server's region.
type QuotaUsage struct {
	Name string
	// Namespaces are the namespaces that name the quota, sorted.
	Namespaces []string
	Used       QuotaResources
}

// QuotaUsageResponse answers a usage read; Usage is nil when there is no
// quota of that name.
type QuotaUsageResponse struct {
	Usage *QuotaUsage
	// Region is the region the usage is of, and Limit the quota's limit
	// there (nil: none).
	Region string
	Limit  *RegionLimit
	QueryMeta
}
