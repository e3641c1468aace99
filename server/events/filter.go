package events

import (
	"fmt"
	"slices"

	"github.com/droverhq/drover/structs"
)

// MaxTopics bounds the topic:key pairs of one subscription.
const MaxTopics = 64

// topics a subscription may name.
var knownTopics = []string{
	structs.TopicJob, structs.TopicAllocation, structs.TopicEvaluation, structs.TopicNode,
	structs.TopicDeployment, structs.TopicQuota, structs.TopicQueue, structs.TopicGPU, structs.TopicService, structs.TopicAll,
}

// filter selects events by topic and key, and by namespace.
type filter struct {
	// keys maps a topic (or "*") to its keys; a "*" key selects all.
	keys      map[string][]string
	namespace string
}

func newFilter(req *structs.EventStreamRequest) (*filter, error) {
	n := 0
	for topic, keys := range req.Topics {
		if !slices.Contains(knownTopics, topic) {
			return nil, fmt.Errorf("topic %q: %w: known topics are %v", topic, structs.ErrInvalid, knownTopics)
		}
		n += max(len(keys), 1)
	}
	if n > MaxTopics {
		return nil, fmt.Errorf("%d topic:key pairs: %w: the limit is %d", n, structs.ErrInvalid, MaxTopics)
	}
	topics := req.Topics
	if len(topics) == 0 {
		topics = map[string][]string{structs.TopicAll: {"*"}}
	}
	ns := req.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	return &filter{keys: topics, namespace: ns}, nil
}

// selects reports whether the filter selects e.
func (f *filter) selects(e *structs.Event) bool {
	if e.Namespace != "" && f.namespace != "*" && e.Namespace != f.namespace {
		return false
	}
	for _, topic := range []string{e.Topic, structs.TopicAll} {
		if keys, ok := f.keys[topic]; ok && matchKeys(keys, e) {
			return true
		}
	}
	return false
}

// matchKeys reports whether one of keys selects e: "*", its key or one
// of its filter keys. A topic named without keys selects all.
func matchKeys(keys []string, e *structs.Event) bool {
	if len(keys) == 0 {
		return true
	}
	for _, k := range keys {
		if k == "*" || k == e.Key || slices.Contains(e.FilterKeys, k) {
			return true
		}
	}
	return false
}

// keep returns the batch with only the events the filter selects and
// allow (nil: all) admits.
func (f *filter) keep(b Batch, allow func(*structs.Event) bool) Batch {
	out := Batch{Index: b.Index}
	for i := range b.Events {
		e := &b.Events[i]
		if f.selects(e) && (allow == nil || allow(e)) {
			out.Events = append(out.Events, *e)
		}
	}
	return out
}
