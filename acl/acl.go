package acl

// ACL is the compiled decision of a token's policies. It is immutable and
// safe for concurrent use. A nil *ACL allows nothing: where ACLs are
// disabled, use ManagementACL.
type ACL struct {
	management bool
	namespaces ruleSet[capSet]
	// variables holds, by namespace rule name, the path rules.
	variables ruleSet[ruleSet[capSet]]
	queues    ruleSet[level]
	// coarse is the grant for node, agent, operator and quota.
	coarse [numAreas]level
}

// area is one of the rules without a name: node, agent, operator, quota.
type area int

const (
	areaNode area = iota
	areaAgent
	areaOperator
	areaQuota
	numAreas
)

// ManagementACL allows everything.
var ManagementACL = New(true, nil)

// capSet is the capabilities a namespace rule grants; a set holding
// CapDeny denies everything.
type capSet map[string]bool

func (c capSet) denies() bool { return c[CapDeny] }

// level is a coarse grant: node, agent, operator, quota and queue rules.
// The order matters: merging keeps the greater, so deny beats write
// beats read.
type level uint8

const (
	levelNone level = iota
	levelRead
	levelWrite
	levelDeny
)

func parseLevel(policy string) level {
	switch policy {
	case PolicyRead:
		return levelRead
	case PolicyWrite:
		return levelWrite
	case PolicyDeny:
		return levelDeny
	}
	return levelNone
}

// merge is the stronger of two grants; deny beats both.
func (l level) merge(o level) level { return max(l, o) }

func (l level) allows(write bool) bool {
	if write {
		return l == levelWrite
	}
	return l == levelRead || l == levelWrite
}

// New compiles policies into an ACL; management bypasses every check.
// Nil policies and rules are skipped, and so are capabilities and policy
// values New does not know (Parse lets none through).
func New(management bool, policies []*Policy) *ACL {
	a := &ACL{management: management}
	if management {
		return a
	}
	namespaces := map[string]capSet{}
	varPaths := map[string]variablePaths{}
	queues := map[string]level{}
	for _, p := range policies {
		if p == nil {
			continue
		}
		for _, r := range p.Namespaces {
			if r != nil {
				namespaces[r.Name] = mergeNamespaceRule(namespaces[r.Name], r)
				varPaths[r.Name] = mergeVariableRules(varPaths[r.Name], r)
			}
		}
		for _, r := range p.Queues {
			if r != nil {
				queues[r.Name] = queues[r.Name].merge(parseLevel(r.Policy))
			}
		}
		for ar, policy := range [numAreas]string{areaNode: p.Node, areaAgent: p.Agent, areaOperator: p.Operator, areaQuota: p.Quota} {
			a.coarse[ar] = a.coarse[ar].merge(parseLevel(policy))
		}
	}
	a.namespaces = newRuleSet(namespaces)
	byNamespace := map[string]ruleSet[capSet]{}
	for name, paths := range varPaths {
		byNamespace[name] = newRuleSet(map[string]capSet(paths))
	}
	a.variables = newRuleSet(byNamespace)
	a.queues = newRuleSet(queues)
	return a
}

// mergeNamespaceRule adds what r grants to have (nil for none yet): the
// union of both, or deny alone when either denies.
func mergeNamespaceRule(have capSet, r *NamespaceRule) capSet {
	if have == nil {
		have = capSet{}
	}
	if have.denies() {
		return have
	}
	grants := append(ExpandNamespacePolicy(r.Policy), r.Capabilities...)
	for _, c := range grants {
		if c == CapDeny {
			return capSet{CapDeny: true}
		}
	}
	for _, c := range grants {
		have[c] = true
	}
	return have
}

// IsManagement reports whether the ACL is a management token's.
func (a *ACL) IsManagement() bool { return a != nil && a.management }

// AllowNamespaceOperation reports whether capability may be used in
// namespace ns. For ns "*" (a request across all namespaces) it reports
// whether some namespace rule grants capability; the caller then filters
// results namespace by namespace.
func (a *ACL) AllowNamespaceOperation(ns, capability string) bool {
	switch {
	case a == nil:
		return false
	case a.management:
		return true
	case ns == "*":
		return a.namespaces.any(func(c capSet) bool { return !c.denies() && c[capability] })
	}
	c, ok := a.namespaces.match(ns)
	return ok && !c.denies() && c[capability]
}

// AllowNamespace reports whether the ACL grants anything at all in
// namespace ns (to list it, say). For ns "*" it reports whether it grants
// anything in some namespace.
func (a *ACL) AllowNamespace(ns string) bool {
	grantsSome := func(c capSet) bool { return !c.denies() && len(c) > 0 }
	switch {
	case a == nil:
		return false
	case a.management:
		return true
	case ns == "*":
		return a.namespaces.any(grantsSome)
	}
	c, ok := a.namespaces.match(ns)
	return ok && grantsSome(c)
}

// AllowQueue reports whether the ACL may view a queue (write false) or
// submit jobs into it and change it (write true).
//
// The default queue is open: when no queue rule matches "default",
// AllowQueue allows it, and submitting there needs only submit-job in
// the job's namespace (which the caller checks). Any other queue needs a
// rule that matches it.
func (a *ACL) AllowQueue(queue string, write bool) bool {
	switch {
	case a == nil:
		return false
	case a.management:
		return true
	}
	l, ok := a.queues.match(queue)
	if !ok {
		return queue == defaultQueue
	}
	return l.allows(write)
}

// defaultQueue is the queue of jobs that name none (structs.DefaultQueue;
// this package imports no other Drover package).
const defaultQueue = "default"

// allowArea reports whether the ACL may read (write false) or change
// (write true) in area ar.
func (a *ACL) allowArea(ar area, write bool) bool {
	switch {
	case a == nil:
		return false
	case a.management:
		return true
	}
	return a.coarse[ar].allows(write)
}

// AllowNodeRead reports whether the ACL may read nodes.
func (a *ACL) AllowNodeRead() bool { return a.allowArea(areaNode, false) }

// AllowNodeWrite reports whether the ACL may change nodes (drain,
// eligibility).
func (a *ACL) AllowNodeWrite() bool { return a.allowArea(areaNode, true) }

// AllowAgentRead reports whether the ACL may read agent information.
func (a *ACL) AllowAgentRead() bool { return a.allowArea(areaAgent, false) }

// AllowAgentWrite reports whether the ACL may change agents.
func (a *ACL) AllowAgentWrite() bool { return a.allowArea(areaAgent, true) }

// AllowOperatorRead reports whether the ACL may read cluster-level
// operator information (raft, scheduler configuration).
func (a *ACL) AllowOperatorRead() bool { return a.allowArea(areaOperator, false) }

// AllowOperatorWrite reports whether the ACL may change cluster-level
// operator settings.
func (a *ACL) AllowOperatorWrite() bool { return a.allowArea(areaOperator, true) }

// AllowQuotaRead reports whether the ACL may read quotas.
func (a *ACL) AllowQuotaRead() bool { return a.allowArea(areaQuota, false) }

// AllowQuotaWrite reports whether the ACL may change quotas.
func (a *ACL) AllowQuotaWrite() bool { return a.allowArea(areaQuota, true) }
