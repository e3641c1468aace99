package structs

import "fmt"

// Shape checks keep input that would crash a copy or a scheduler loop (a
// nil element in a list or map of pointers) out of the endpoints and the
// state store, and so out of the Raft log: an entry that cannot be applied
// is applied again by every server on every restart.

// CheckShape returns an error wrapping ErrInvalid when the node holds nil device groups, instances or driver infos.
func (node *Node) CheckShape() error {
	for name, d := range node.Drivers {
		if d == nil {
			return fmt.Errorf("node %s: driver %q: missing info: %w", node.ID, name, ErrInvalid)
		}
	}
	if node.NodeResources == nil {
		return nil
	}
	for i, g := range node.NodeResources.Devices {
		if g == nil {
			return fmt.Errorf("node %s: device group %d: missing: %w", node.ID, i, ErrInvalid)
		}
		for j, inst := range g.Instances {
			if inst == nil {
				return fmt.Errorf("node %s: device %s: instance %d: missing: %w", node.ID, g.ID(), j, ErrInvalid)
			}
		}
	}
	return nil
}

// CheckShape returns an error wrapping ErrInvalid when the job holds nil groups, tasks, constraints, affinities or device requests.
func (job *Job) CheckShape() error {
	bad := func(what string) error {
		return fmt.Errorf("job %q: %s: missing: %w", job.ID, what, ErrInvalid)
	}
	if hasNil(job.Constraints) || hasNil(job.Affinities) {
		return bad("constraint or affinity")
	}
	if spreadsHaveNil(job.Spreads) {
		return bad("spread or spread target")
	}
	for i, tg := range job.TaskGroups {
		if tg == nil {
			return bad(fmt.Sprintf("group %d", i))
		}
		if hasNil(tg.Constraints) || hasNil(tg.Affinities) {
			return bad(fmt.Sprintf("group %q: constraint or affinity", tg.Name))
		}
		if spreadsHaveNil(tg.Spreads) {
			return bad(fmt.Sprintf("group %q: spread or spread target", tg.Name))
		}
		for j, t := range tg.Tasks {
			if t == nil {
				return bad(fmt.Sprintf("group %q: task %d", tg.Name, j))
			}
			if hasNil(t.Constraints) || hasNil(t.Affinities) {
				return bad(fmt.Sprintf("task %q: constraint or affinity", t.Name))
			}
			if t.Resources == nil {
				continue
			}
			for _, d := range t.Resources.Devices {
				if d == nil || hasNil(d.Constraints) || hasNil(d.Affinities) {
					return bad(fmt.Sprintf("task %q: device request", t.Name))
				}
			}
		}
	}
	return nil
}

func hasNil[T any](list []*T) bool {
	for _, v := range list {
		if v == nil {
			return true
		}
	}
	return false
}
