package broker

import (
	"container/heap"

	"github.com/droverhq/drover/structs"
)

// queued is an evaluation waiting in a queue; seq is the order it arrived
// in, so equal priorities come out first in, first out.
type queued struct {
	eval *structs.Evaluation
	seq  uint64
}

// evalQueue is a priority queue: highest Priority first, then lowest seq.
type evalQueue struct{ items []queued }

func (q *evalQueue) Len() int { return len(q.items) }

func (q *evalQueue) Less(i, j int) bool { return before(q.items[i], q.items[j]) }

func (q *evalQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }

func (q *evalQueue) Push(x any) { q.items = append(q.items, x.(queued)) }

func (q *evalQueue) Pop() any {
	n := len(q.items)
	it := q.items[n-1]
	q.items[n-1] = queued{}
	q.items = q.items[:n-1]
	return it
}

func (q *evalQueue) push(e *structs.Evaluation, seq uint64) { heap.Push(q, queued{eval: e, seq: seq}) }

func (q *evalQueue) pop() queued { return heap.Pop(q).(queued) }

// peek returns the next item; the queue must not be empty.
func (q *evalQueue) peek() queued { return q.items[0] }

// before reports whether a should be handed out before b.
func before(a, b queued) bool {
	if a.eval.Priority != b.eval.Priority {
		return a.eval.Priority > b.eval.Priority
	}
	return a.seq < b.seq
}
