package acl

// Variable capabilities (a namespace's variables path rules), with
// Nomad's names.
const (
	VariablesCapList    = "list"
	VariablesCapRead    = "read"
	VariablesCapWrite   = "write"
	VariablesCapDestroy = "destroy"
	VariablesCapDeny    = "deny"
)

// VariablesPathRule grants capabilities on the variables whose path
// PathSpec matches (a path, or a glob with * wildcards), within the
// namespaces of its namespace rule.
type VariablesPathRule struct {
	PathSpec     string
	Capabilities []string
}

// expandVariablesPolicy is what a namespace rule's coarse policy grants
// on every variable path ("*"), as Nomad's read and write policies do.
func expandVariablesPolicy(policy string) []string {
	switch policy {
	case PolicyRead:
		return []string{VariablesCapList, VariablesCapRead}
	case PolicyWrite:
		return []string{VariablesCapList, VariablesCapRead, VariablesCapWrite, VariablesCapDestroy}
	case PolicyDeny:
		return []string{VariablesCapDeny}
	}
	return nil
}

// variablePaths are the merged path rules of one namespace rule name.
type variablePaths map[string]capSet

// mergeVariableRules adds r's path rules (and what its policy implies) to
// have.
func mergeVariableRules(have variablePaths, r *NamespaceRule) variablePaths {
	if have == nil {
		have = variablePaths{}
	}
	add := func(path string, caps []string) {
		c := have[path]
		if c == nil {
			c = capSet{}
			have[path] = c
		}
		if c.denies() {
			return
		}
		for _, cp := range caps {
			if cp == VariablesCapDeny {
				clear(c)
				c[CapDeny] = true
				return
			}
		}
		for _, cp := range caps {
			c[cp] = true
		}
	}
	if caps := expandVariablesPolicy(r.Policy); caps != nil {
		add("*", caps)
	}
	for _, pr := range r.Variables {
		if pr != nil {
			add(pr.PathSpec, pr.Capabilities)
		}
	}
	return have
}

// AllowVariableOperation reports whether capability (list, read, write,
// destroy) may be used on the variable at path in namespace ns: the
// namespace rule that matches ns, then its path rule that matches path
// most closely.
func (a *ACL) AllowVariableOperation(ns, path, capability string) bool {
	switch {
	case a == nil:
		return false
	case a.management:
		return true
	}
	paths, ok := a.variables.match(ns)
	if !ok {
		return false
	}
	c, ok := paths.match(path)
	return ok && !c.denies() && c[capability]
}

// AllowVariableList reports whether the ACL may list some variables in
// namespace ns ("*": in some namespace): the check before a list, whose
// answer is then filtered variable by variable.
func (a *ACL) AllowVariableList(ns string) bool {
	switch {
	case a == nil:
		return false
	case a.management:
		return true
	}
	canList := func(paths ruleSet[capSet]) bool {
		return paths.any(func(c capSet) bool { return !c.denies() && c[VariablesCapList] })
	}
	if ns == "*" {
		return a.variables.any(canList)
	}
	paths, ok := a.variables.match(ns)
	return ok && canList(paths)
}
