package feasible

import (
	"cmp"
	"regexp"
	"strings"

	"github.com/droverhq/drover/structs"
)

// Resolver turns a constraint target into its value. A target without
// `${...}` is a literal; ok is false when an interpolated attribute is not
// set.
type Resolver func(target string) (value string, ok bool)

// NodeResolver resolves `${node.unique.id}`, `${node.unique.name}`,
// `${node.datacenter}`, `${node.class}`, `${attr.<key>}` and
// `${meta.<key>}` against n.
func NodeResolver(n *structs.Node) Resolver {
	return func(target string) (string, bool) {
		key, interpolated := interpolation(target)
		if !interpolated {
			return target, true
		}
		switch {
		case key == "node.unique.id":
			return n.ID, true
		case key == "node.unique.name":
			return n.Name, true
		case key == "node.datacenter":
			return n.Datacenter, true
		case key == "node.class":
			return n.NodeClass, true
		case strings.HasPrefix(key, "attr."):
			v, ok := n.Attributes[strings.TrimPrefix(key, "attr.")]
			return v, ok
		case strings.HasPrefix(key, "meta."):
			v, ok := n.Meta[strings.TrimPrefix(key, "meta.")]
			return v, ok
		}
		return "", false
	}
}

// DeviceResolver resolves `${device.vendor}`, `${device.type}`,
// `${device.model}`, `${device.ids}` (the instance's ID) and
// `${device.attr.<key>}` (the instance's attribute, else the group's)
// for one instance of group.
func DeviceResolver(group *structs.NodeDeviceResource, inst *structs.NodeDevice) Resolver {
	return func(target string) (string, bool) {
		key, interpolated := interpolation(target)
		if !interpolated {
			return target, true
		}
		switch {
		case key == "device.vendor":
			return group.Vendor, true
		case key == "device.type":
			return group.Type, true
		case key == "device.model":
			return group.Name, true
		case key == "device.ids":
			return inst.ID, true
		case strings.HasPrefix(key, "device.attr."):
			name := strings.TrimPrefix(key, "device.attr.")
			if v, ok := inst.Attributes[name]; ok {
				return v, true
			}
			v, ok := group.Attributes[name]
			return v, ok
		}
		return "", false
	}
}

func interpolation(target string) (key string, ok bool) {
	if strings.HasPrefix(target, "${") && strings.HasSuffix(target, "}") {
		return target[2 : len(target)-1], true
	}
	return "", false
}

// Checker evaluates constraint operators. It caches compiled regular
// expressions and version ranges, so it is not safe for concurrent use;
// a Stack owns one.
type Checker struct {
	regexps  map[string]*regexp.Regexp
	versions map[string]versionRange
}

// NewChecker returns an empty Checker.
func NewChecker() *Checker {
	return &Checker{regexps: map[string]*regexp.Regexp{}, versions: map[string]versionRange{}}
}

// Holds reports whether the constraint (lt op rt) holds with targets
// resolved by resolve. distinct_hosts and distinct_property are not
// attribute checks and always hold here; their own stages judge them.
func (c *Checker) Holds(lt, op, rt string, resolve Resolver) bool {
	l, lok := resolve(lt)
	r, rok := resolve(rt)
	switch op {
	case "=", "==", "is":
		return lok && rok && l == r
	case "!=", "not":
		return !(lok && rok && l == r)
	case "<", "<=", ">", ">=":
		return lok && rok && orderHolds(op, compareValues(l, r))
	case structs.ConstraintRegex:
		re := c.regexp(r)
		return lok && rok && re != nil && re.MatchString(l)
	case structs.ConstraintVersion, structs.ConstraintSemver:
		vr, valid := c.versionRange(r)
		v, vok := parseVersion(l)
		return lok && rok && valid && vok && vr.matches(v)
	case structs.ConstraintSetContains, structs.ConstraintSetContainsAll:
		return lok && rok && setContains(l, r, true)
	case structs.ConstraintSetContainsAny:
		return lok && rok && setContains(l, r, false)
	case structs.ConstraintAttributeIsSet:
		return lok
	case structs.ConstraintAttributeNotSet:
		return !lok
	case structs.ConstraintDistinctHosts, structs.ConstraintDistinctProperty:
		return true
	}
	return false
}

func (c *Checker) regexp(expr string) *regexp.Regexp {
	if re, ok := c.regexps[expr]; ok {
		return re
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		re = nil
	}
	c.regexps[expr] = re
	return re
}

func (c *Checker) versionRange(expr string) (versionRange, bool) {
	if vr, ok := c.versions[expr]; ok {
		return vr, vr != nil
	}
	vr, ok := parseVersionRange(expr)
	if !ok {
		vr = nil
	}
	c.versions[expr] = vr
	return vr, ok
}

func orderHolds(op string, c int) bool {
	switch op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	default:
		return c >= 0
	}
}

// compareValues orders two attribute values: as quantities when both
// carry units of the same dimension ("80 GiB" vs "100 GiB"), as versions
// when both look like "a.b[.c]" ("8.6" vs "9.0"), as numbers when both are
// numbers, else lexically.
func compareValues(l, r string) int {
	ql, lok := structs.ParseQuantity(l)
	qr, rok := structs.ParseQuantity(r)
	if lok && rok && ql.Dim == qr.Dim && ql.Dim != structs.DimNone {
		return cmp.Compare(ql.Value, qr.Value)
	}
	if looksLikeVersion(l) && looksLikeVersion(r) {
		vl, _ := parseVersion(l)
		vr, _ := parseVersion(r)
		return compareVersions(vl, vr)
	}
	if lok && rok && ql.Dim == structs.DimNone && qr.Dim == structs.DimNone {
		return cmp.Compare(ql.Value, qr.Value)
	}
	return strings.Compare(l, r)
}

// setContains reports whether the comma-separated set have holds every
// (all) or any (!all) item of the comma-separated want.
func setContains(have, want string, all bool) bool {
	set := map[string]bool{}
	for _, item := range strings.Split(have, ",") {
		set[strings.TrimSpace(item)] = true
	}
	for _, item := range strings.Split(want, ",") {
		found := set[strings.TrimSpace(item)]
		if all && !found {
			return false
		}
		if !all && found {
			return true
		}
	}
	return all
}
