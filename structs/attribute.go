package structs

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Attribute is Nomad's typed attribute value, the JSON shape of a device
// group's attributes on the HTTP API (Nomad's api.Attribute). Drover
// keeps attributes as strings ("80 GiB") inside; this is only how they
// travel as JSON, so that Nomad's client decodes a node.
//
// Its JSON names are Nomad's: "Float", "Int", "String", "Bool", "Unit".
type Attribute struct {
	FloatVal  *float64 `json:"Float,omitempty"`
	IntVal    *int64   `json:"Int,omitempty"`
	StringVal *string  `json:"String,omitempty"`
	BoolVal   *bool    `json:"Bool,omitempty"`
	Unit      string   `json:",omitempty"`
}

const mib = 1 << 20

// AttributeOf types a string attribute as Nomad fingerprints it:
// "true"/"false" a bool, a whole number an int, a size a whole number of
// MiB with Unit "MiB" (Nomad's nvidia memory), another number with a
// known unit an int or float with that unit. Anything else, bare
// fractions included ("9.0" is a version, not 9), stays a string, so
// that String gives back an equal value.
func AttributeOf(s string) *Attribute {
	switch s {
	case "true", "false":
		b := s == "true"
		return &Attribute{BoolVal: &b}
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return &Attribute{IntVal: &i}
	}
	if a, ok := unitAttribute(s); ok {
		return a
	}
	return &Attribute{StringVal: &s}
}

// unitAttribute types a number with a known unit.
func unitAttribute(s string) (*Attribute, bool) {
	s = strings.TrimSpace(s)
	i := strings.LastIndexAny(s, "0123456789.")
	if i < 0 || i == len(s)-1 {
		return nil, false
	}
	num, unit := strings.TrimSpace(s[:i+1]), strings.TrimSpace(s[i+1:])
	u, known := units[unit]
	v, err := strconv.ParseFloat(num, 64)
	if !known || err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, false
	}
	if u.dim == DimBytes {
		if m := v * u.factor / mib; m == math.Trunc(m) && math.Abs(m) < 1<<53 {
			n := int64(m)
			return &Attribute{IntVal: &n, Unit: "MiB"}, true
		}
	}
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		n := int64(v)
		return &Attribute{IntVal: &n, Unit: unit}, true
	}
	return &Attribute{FloatVal: &v, Unit: unit}, true
}

// String renders the attribute as Drover writes attributes: sizes with
// the largest binary unit that keeps them whole enough ("80 GiB"), other
// numbers followed by their unit.
func (a *Attribute) String() string {
	var v string
	switch {
	case a == nil:
		return ""
	case a.StringVal != nil:
		return *a.StringVal
	case a.BoolVal != nil:
		return strconv.FormatBool(*a.BoolVal)
	case a.IntVal != nil:
		if u, ok := units[a.Unit]; ok && u.dim == DimBytes && *a.IntVal >= 0 {
			return FormatBytes(uint64(float64(*a.IntVal) * u.factor))
		}
		v = strconv.FormatInt(*a.IntVal, 10)
	case a.FloatVal != nil:
		v = strconv.FormatFloat(*a.FloatVal, 'f', -1, 64)
	}
	if a.Unit == "" {
		return v
	}
	return v + " " + a.Unit
}

// typedAttributes renders string attributes as Nomad's Attribute objects.
func typedAttributes(m map[string]string) map[string]*Attribute {
	if m == nil {
		return nil
	}
	out := make(map[string]*Attribute, len(m))
	for k, v := range m {
		out[k] = AttributeOf(v)
	}
	return out
}

// stringAttributes reads attributes that are Attribute objects (Nomad's
// shape, which Drover writes) or plain strings (what Drover wrote before).
func stringAttributes(m map[string]json.RawMessage) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for k, raw := range m {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			out[k] = s
			continue
		}
		var a Attribute
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = a.String()
	}
	return out, nil
}

// nodeDeviceResourceJSON is NodeDeviceResource without its methods, so
// that its JSON methods do not recurse.
type nodeDeviceResourceJSON NodeDeviceResource

// MarshalJSON writes the group with its Attributes as Nomad's Attribute
// objects.
func (d NodeDeviceResource) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		nodeDeviceResourceJSON
		Attributes map[string]*Attribute
	}{nodeDeviceResourceJSON(d), typedAttributes(d.Attributes)})
}

// UnmarshalJSON reads a group whose Attributes are Attribute objects or
// strings.
func (d *NodeDeviceResource) UnmarshalJSON(b []byte) error {
	var v struct {
		nodeDeviceResourceJSON
		Attributes map[string]json.RawMessage
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	attrs, err := stringAttributes(v.Attributes)
	if err != nil {
		return err
	}
	*d = NodeDeviceResource(v.nodeDeviceResourceJSON)
	d.Attributes = attrs
	return nil
}
