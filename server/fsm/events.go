package fsm

import (
	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// EventSink receives the events of each entry applied, after its
// transaction committed (server/events.Broker). Publish must not block.
type EventSink interface {
	Publish(index uint64, events []structs.Event)
}

// SetEventSink makes the FSM publish the events of each entry it
// applies from now on to sink. Call it before Raft starts applying.
func (f *FSM) SetEventSink(sink EventSink) {
	f.mu.Lock()
	f.events = sink
	f.state.TrackChanges() // and a restored store (Restore)
	f.mu.Unlock()
}

// publishEvents turns the changes the entry's write committed into
// events and publishes them. A failed entry committed nothing and
// publishes nothing.
func (f *FSM) publishEvents(t structs.MessageType, index uint64, result any) {
	f.mu.RLock()
	s, sink := f.state, f.events
	f.mu.RUnlock()
	changes := s.TakeChanges()
	if sink == nil {
		return
	}
	if err, ok := result.(error); ok && err != nil {
		return
	}
	if evs := EventsFromChanges(t, index, changes); len(evs) > 0 {
		sink.Publish(index, evs)
	}
}

// EventsFromChanges maps the rows an entry of type t changed to events,
// in the order they were written. Rows of derived tables (usage, tallies,
// indexes) make none; nor do deleted allocations and evaluations
// (garbage collection).
func EventsFromChanges(t structs.MessageType, index uint64, changes memdb.Changes) []structs.Event {
	var out []structs.Event
	for _, c := range changes {
		var evs []structs.Event
		switch c.Table {
		case state.TableJobs:
			evs = jobEvents(t, c)
		case state.TableAllocs:
			evs = allocEvents(t, c)
		case state.TableEvals:
			evs = evalEvents(c)
		case state.TableNodes:
			evs = nodeEvents(t, c)
		case state.TableQuotas:
			evs = namedEvents(c, structs.TopicQuota, "Quota", structs.TypeQuotaUpserted, structs.TypeQuotaDeleted)
		case state.TableQueues:
			evs = namedEvents(c, structs.TopicQueue, "Queue", structs.TypeQueueUpserted, structs.TypeQueueDeleted)
		case state.TableServiceRegistrations:
			evs = serviceEvents(c) // service.go
		case state.TableDeployments:
			evs = deploymentEvents(t, c) // deployment.go
		}
		out = append(out, evs...)
	}
	for i := range out {
		out[i].Index = index
	}
	return out
}

func jobEvents(t structs.MessageType, c memdb.Change) []structs.Event {
	if c.Deleted() {
		job := c.Before.(*structs.Job)
		return []structs.Event{jobEvent(structs.TypeJobDeregistered, job, map[string]any{"Job": job, "Deleted": true})}
	}
	job := c.After.(*structs.Job)
	typ := ""
	switch {
	case t == structs.JobRegisterRequestType:
		typ = structs.TypeJobRegistered
	case t == structs.JobDeregisterRequestType:
		typ = structs.TypeJobDeregistered
	case c.Created():
		typ = structs.TypeJobRegistered
	case c.Before.(*structs.Job).Status != job.Status:
		typ = structs.TypeJobStatusUpdated
	default:
		return nil
	}
	return []structs.Event{jobEvent(typ, job, map[string]any{"Job": job})}
}

func jobEvent(typ string, job *structs.Job, payload map[string]any) structs.Event {
	return structs.Event{Topic: structs.TopicJob, Type: typ, Key: job.ID, Namespace: nsOf(job.Namespace), Payload: payload}
}

func allocEvents(t structs.MessageType, c memdb.Change) []structs.Event {
	if c.Deleted() {
		return nil
	}
	after := c.After.(*structs.Allocation)
	typ := structs.TypeAllocationUpdated
	switch {
	case c.Created():
		typ = structs.TypeAllocationCreated
	case t == structs.AllocClientUpdateRequestType:
	case c.Before.(*structs.Allocation).DesiredStatus != after.DesiredStatus:
		typ = structs.TypeAllocationUpdateDesiredStatus
	}
	// As Nomad: the job is the Job topic's; an allocation's is left out.
	alloc := *after
	alloc.Job = nil
	return []structs.Event{{
		Topic: structs.TopicAllocation, Type: typ, Key: alloc.ID, Namespace: nsOf(alloc.Namespace),
		FilterKeys: []string{alloc.JobID}, Payload: map[string]any{"Allocation": &alloc},
	}}
}

func evalEvents(c memdb.Change) []structs.Event {
	if c.Deleted() {
		return nil
	}
	eval := c.After.(*structs.Evaluation)
	return []structs.Event{{
		Topic: structs.TopicEvaluation, Type: structs.TypeEvalUpdated, Key: eval.ID, Namespace: nsOf(eval.Namespace),
		FilterKeys: []string{eval.JobID}, Payload: map[string]any{"Evaluation": eval},
	}}
}

func nodeEvents(t structs.MessageType, c memdb.Change) []structs.Event {
	if c.Deleted() {
		return []structs.Event{nodeEvent(structs.TypeNodeDeregistration, c.Before.(*structs.Node))}
	}
	after := c.After.(*structs.Node)
	typ := structs.TypeNodeEvent
	if t == structs.NodeRegisterRequestType {
		typ = structs.TypeNodeRegistration
	}
	out := []structs.Event{nodeEvent(typ, after)}
	var before *structs.Node
	if !c.Created() {
		before = c.Before.(*structs.Node)
	}
	return append(out, gpuHealthEvents(before, after)...)
}

// nodeEvent is an event of the node without its secret
// (events_shape.go).
func nodeEvent(typ string, n *structs.Node) structs.Event {
	return structs.Event{Topic: structs.TopicNode, Type: typ, Key: n.ID, Payload: map[string]any{"Node": eventNode(n)}}
}

// GPUHealth is the payload of a GPU topic event ({"GPU": ...}).
type GPUHealth struct {
	NodeID            string
	ID                string // the GPU's UUID
	Name              string // the device group's vendor/type/model
	Healthy           bool
	HealthDescription string
}

// gpuHealthEvents reports each GPU of after whose health differs from
// before's (a new node's unhealthy GPUs too). Key is the GPU's UUID;
// the node's ID is a filter key.
func gpuHealthEvents(before, after *structs.Node) []structs.Event {
	was := map[string]bool{}
	for _, g := range nodeGPUs(before) {
		was[g.ID] = g.Healthy
	}
	var out []structs.Event
	for _, g := range nodeGPUs(after) {
		healthy, known := was[g.ID]
		if known && healthy == g.Healthy || !known && g.Healthy {
			continue
		}
		out = append(out, structs.Event{
			Topic: structs.TopicGPU, Type: structs.TypeGPUHealthChanged, Key: g.ID, FilterKeys: []string{after.ID},
			Payload: map[string]any{"GPU": &g},
		})
	}
	return out
}

// nodeGPUs lists a node's device instances (nil node: none).
func nodeGPUs(n *structs.Node) []GPUHealth {
	if n == nil || n.NodeResources == nil {
		return nil
	}
	var out []GPUHealth
	for _, d := range n.NodeResources.Devices {
		if d == nil {
			continue
		}
		for _, inst := range d.Instances {
			if inst != nil {
				out = append(out, GPUHealth{NodeID: n.ID, ID: inst.ID, Name: d.ID(), Healthy: inst.Healthy, HealthDescription: inst.HealthDescription})
			}
		}
	}
	return out
}

func namedEvents(c memdb.Change, topic, kind, upserted, deleted string) []structs.Event {
	typ, obj := upserted, c.After
	if c.Deleted() {
		typ, obj = deleted, c.Before
	}
	var key string
	switch o := obj.(type) {
	case *structs.QuotaSpec:
		key = o.Name
	case *structs.Queue:
		key = o.Name
	default:
		return nil
	}
	return []structs.Event{{Topic: topic, Type: typ, Key: key, Payload: map[string]any{kind: obj}}}
}

// nsOf is an object's namespace, the default when it names none.
func nsOf(ns string) string {
	if ns == "" {
		return structs.DefaultNamespace
	}
	return ns
}
