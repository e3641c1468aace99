package structs

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestQueueValidate(t *testing.T) {
	tests := []struct {
		name string
		q    Queue
		want string // "" for valid; else a substring of the error
	}{
		{"minimal", Queue{Name: "research", Weight: 1}, ""},
		{"everything", Queue{Name: "r-2", Description: "R&D", Weight: 1000, GuaranteedGPUs: 4, MaxGPUs: 8}, ""},
		{"max equals guaranteed", Queue{Name: "q", Weight: 1, GuaranteedGPUs: 2, MaxGPUs: 2}, ""},
		{"guarantee without max", Queue{Name: "q", Weight: 1, GuaranteedGPUs: 3}, ""},
		{"missing name", Queue{Weight: 1}, "name: want 1 to 128 letters, digits or dashes"},
		{"bad name", Queue{Name: "a/b", Weight: 1}, "letters, digits or dashes"},
		{"long name", Queue{Name: strings.Repeat("q", 129), Weight: 1}, "letters, digits or dashes"},
		{"long description", Queue{Name: "q", Weight: 1, Description: strings.Repeat("d", 257)}, "description is 257 characters, at most 256"},
		{"weight 0", Queue{Name: "q"}, "weight 0: want 1 to 1000"},
		{"negative weight", Queue{Name: "q", Weight: -2}, "weight -2: want 1 to 1000"},
		{"weight over 1000", Queue{Name: "q", Weight: 1001}, "weight 1001: want 1 to 1000"},
		{"negative guarantee", Queue{Name: "q", Weight: 1, GuaranteedGPUs: -1}, "guaranteed GPUs -1: must not be negative"},
		{"negative max", Queue{Name: "q", Weight: 1, MaxGPUs: -1}, "max GPUs -1: must not be negative (0 is unlimited)"},
		{"max below guaranteed", Queue{Name: "q", Weight: 1, GuaranteedGPUs: 4, MaxGPUs: 2}, "max GPUs 2 is below the 4 guaranteed"},
		{"huge guarantee", Queue{Name: "q", Weight: 1, GuaranteedGPUs: 1 << 30}, "at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.q.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid)):
				t.Fatalf("got %v, want an ErrInvalid with %q", err, tt.want)
			}
		})
	}
}

func TestQueueCanonicalizeAndCopy(t *testing.T) {
	q := &Queue{Name: "q"}
	q.Canonicalize()
	if q.Weight != 1 {
		t.Errorf("canonical weight = %d, want 1", q.Weight)
	}
	q.Weight = 7
	q.Canonicalize()
	if q.Weight != 7 {
		t.Errorf("canonicalize changed weight 7 to %d", q.Weight)
	}
	c := q.Copy()
	c.Weight = 9
	if q.Weight != 7 {
		t.Errorf("changing a copy changed the original")
	}
	if (*Queue)(nil).Copy() != nil || (*Queue)(nil).CheckShape() == nil || q.CheckShape() != nil {
		t.Errorf("nil queue: Copy not nil or CheckShape not refusing")
	}
	if d := DefaultQueueObject(); d.Validate() != nil || d.Name != DefaultQueue || d.Weight != 1 || d.GuaranteedGPUs != 0 || d.MaxGPUs != 0 {
		t.Errorf("default queue = %+v, want a valid weight-1 queue with no guarantee and no max", d)
	}
	if QueueName("") != DefaultQueue || QueueName("r") != "r" {
		t.Errorf("QueueName: empty must be the default queue")
	}
}

func TestFairShares(t *testing.T) {
	queues := []*Queue{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}, {Name: "idle", Weight: 100}, {Name: "w", Weight: 4}, nil}
	tests := []struct {
		name  string
		usage map[string]QueueUsage
		gpus  int
		want  map[string]float64
	}{
		{"nothing active", nil, 8, map[string]float64{}},
		{"one active queue gets everything", map[string]QueueUsage{"a": {GPUs: 0.5}}, 8, map[string]float64{"a": 8}},
		{"by weight, holders and waiters", map[string]QueueUsage{"a": {GPUs: 2}, "b": {GPUs: 0, Waiting: 1}, "w": {GPUs: 1}}, 8,
			map[string]float64{"a": 1, "b": 3, "w": 4}},
		{"no GPUs in the cluster", map[string]QueueUsage{"a": {Waiting: 2}}, 0, map[string]float64{"a": 0}},
		{"usage of unknown queues is ignored", map[string]QueueUsage{"gone": {GPUs: 4}, "b": {GPUs: 1}}, 6, map[string]float64{"b": 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FairShares(queues, tt.usage, tt.gpus); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestQueueStatuses(t *testing.T) {
	queues := []*Queue{DefaultQueueObject(), {Name: "r", Weight: 3}}
	got := QueueStatuses(queues, map[string]QueueUsage{"r": {GPUs: 1, Waiting: 2}, "default": {GPUs: 1}}, map[string]int{"r": 5}, 4)
	if len(got) != 2 || got[0].FairShare != 1 || got[1].FairShare != 3 || got[1].Jobs != 5 ||
		got[1].Usage != (QueueUsage{Queue: "r", GPUs: 1, Waiting: 2}) || got[0].ClusterGPUs != 4 {
		t.Errorf("statuses = %+v %+v, want default 1 of 4 GPUs, r 3 with 5 jobs", got[0], got[1])
	}
}
