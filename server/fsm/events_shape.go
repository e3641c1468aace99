package fsm

import "github.com/droverhq/drover/structs"

// EventNode is a node event's payload: the node without its secret, its
// device groups' attributes in Nomad's shape ({"String": "80 GiB"}), so
// that Nomad's client decodes the node (api.Attribute is a struct).
type EventNode struct {
	*structs.Node
	NodeResources *EventNodeResources `json:",omitempty"`
}

// EventNodeResources is structs.NodeResources with Nomad-shaped device
// attributes.
type EventNodeResources struct {
	Cpu     structs.NodeCpuResources
	Memory  structs.NodeMemoryResources
	Devices []*EventDeviceGroup
}

// EventDeviceGroup is a device group with Nomad-shaped attributes.
type EventDeviceGroup struct {
	Vendor     string
	Type       string
	Name       string
	Instances  []*structs.NodeDevice
	Attributes map[string]NomadAttribute
}

// NomadAttribute is a device attribute as Nomad encodes one; Drover's
// are strings.
type NomadAttribute struct {
	String string
}

// eventNode returns n's event payload; n is not changed.
func eventNode(n *structs.Node) *EventNode {
	node := *n
	node.SecretID = ""
	out := &EventNode{Node: &node}
	if r := n.NodeResources; r != nil {
		out.NodeResources = &EventNodeResources{Cpu: r.Cpu, Memory: r.Memory}
		for _, d := range r.Devices {
			if d == nil {
				continue
			}
			g := &EventDeviceGroup{Vendor: d.Vendor, Type: d.Type, Name: d.Name, Instances: d.Instances, Attributes: map[string]NomadAttribute{}}
			for k, v := range d.Attributes {
				g.Attributes[k] = NomadAttribute{String: v}
			}
			out.NodeResources.Devices = append(out.NodeResources.Devices, g)
		}
	}
	return out
}
