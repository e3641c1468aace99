package command

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// jsonMutations returns v's JSON with one change each: every object or
// list inside it (v itself included) replaced by null, every list emptied
// and every list given an extra null element. They are what a buggy or
// foreign server could send: the CLI must report them, never panic.
func jsonMutations(t *testing.T, v any) []string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var orig any
	if err := json.Unmarshal(raw, &orig); err != nil {
		t.Fatal(err)
	}
	var out []string
	emit := func(root any) {
		b, err := json.Marshal(root)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	var walk func(path []any)
	walk = func(path []any) {
		cur := lookupJSON(orig, path)
		switch x := cur.(type) {
		case map[string]any:
			emit(replaceJSON(orig, path, nil))
			for _, k := range sortedKeys(x) {
				walk(append(path[:len(path):len(path)], k))
			}
		case []any:
			emit(replaceJSON(orig, path, nil))
			emit(replaceJSON(orig, path, []any{}))
			emit(replaceJSON(orig, path, append(append([]any{}, x...), nil)))
			for i := range x {
				walk(append(path[:len(path):len(path)], i))
			}
		}
	}
	walk(nil)
	return out
}

func lookupJSON(v any, path []any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v
}

// replaceJSON returns a copy of root with the value at path set to nv.
func replaceJSON(root any, path []any, nv any) any {
	if len(path) == 0 {
		return nv
	}
	switch k := path[0].(type) {
	case string:
		m := root.(map[string]any)
		c := make(map[string]any, len(m))
		for kk, vv := range m {
			c[kk] = vv
		}
		c[k] = replaceJSON(m[k], path[1:], nv)
		return c
	default:
		l := root.([]any)
		c := append([]any{}, l...)
		c[k.(int)] = replaceJSON(l[k.(int)], path[1:], nv)
		return c
	}
}

// onRaw answers key with a JSON text as is.
func (f *fakeAgent) onRaw(key, body string) {
	f.onFunc(key, func(*http.Request) (int, any) { return http.StatusOK, json.RawMessage(body) })
}

// runNoPanic runs the CLI and fails the test, naming the answer, if it
// panics.
func runNoPanic(t *testing.T, addr, what string, args ...string) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("drover %s panicked on %s: %v\n%s", strings.Join(args, " "), what, r, debug.Stack())
		}
	}()
	// -address rather than $DROVER_ADDR: the cases run in parallel.
	args = append([]string{args[0], args[1], "-address", addr}, args[2:]...)
	run(t, "", args...)
}

// TestCommandsSurviveOddAPIData feeds every command answers with nulls
// where objects, lists and list elements should be.
func TestCommandsSurviveOddAPIData(t *testing.T) {
	allocs := testAllocs()
	evals := []*structs.Evaluation{
		{ID: evalID1, Status: structs.EvalStatusComplete, CreateIndex: 15, FailedTGAllocs: gpuFailure(), BlockedEval: evalID2},
		{ID: evalID2, Status: structs.EvalStatusBlocked, CreateIndex: 16, FailedTGAllocs: gpuFailure()},
	}
	stubs := []*structs.AllocListStub{allocs[0].Stub(), allocs[1].Stub()}
	// Each case serves good answers on every route but one, which gets
	// each mutation of its answer in turn.
	good := map[string]any{
		"GET /v1/nodes":                                  []*structs.NodeListStub{testNode().Stub()},
		"GET /v1/node/5e6f":                              testNode(),
		"GET /v1/node/" + nodeID + "/allocations":        allocs,
		"GET /v1/allocation/1a2b":                        allocs[0],
		"GET /v1/client/fs/logs/" + allocID1:             "log line\n",
		"GET /v1/jobs":                                   []*structs.JobListStub{testJob().Stub(nil)},
		"GET /v1/job/train":                              testJob(),
		"GET /v1/job/train/summary":                      &structs.JobSummary{JobID: "train", Summary: map[string]structs.TaskGroupSummary{"train": {Running: 1}}},
		"GET /v1/job/train/evaluations":                  evals,
		"GET /v1/job/train/allocations":                  stubs,
		"DELETE /v1/job/train":                           &structs.JobDeregisterResponse{EvalID: evalID1},
		"PUT /v1/jobs":                                   &structs.JobRegisterResponse{EvalID: evalID1},
		"GET /v1/evaluation/" + evalID1:                  evals[0],
		"GET /v1/evaluation/" + evalID1 + "/allocations": stubs,
	}
	cases := []struct {
		route string
		args  []string
	}{
		{"GET /v1/nodes", []string{"node", "status"}},
		{"GET /v1/node/5e6f", []string{"node", "status", "5e6f"}},
		{"GET /v1/node/" + nodeID + "/allocations", []string{"node", "status", "5e6f"}},
		{"GET /v1/allocation/1a2b", []string{"alloc", "status", "-verbose", "1a2b"}},
		{"GET /v1/allocation/1a2b", []string{"alloc", "logs", "1a2b"}},
		{"GET /v1/jobs", []string{"job", "status"}},
		{"GET /v1/jobs", []string{"job", "status", "train"}},
		{"GET /v1/job/train", []string{"job", "status", "train"}},
		{"GET /v1/job/train/summary", []string{"job", "status", "train"}},
		{"GET /v1/job/train/evaluations", []string{"job", "status", "train"}},
		{"GET /v1/job/train/allocations", []string{"job", "status", "train"}},
		{"DELETE /v1/job/train", []string{"job", "stop", "-detach", "train"}},
		{"PUT /v1/jobs", []string{"job", "run", "-detach", "testdata/good.hcl"}},
		{"GET /v1/evaluation/" + evalID1, []string{"job", "run", "testdata/good.hcl"}},
		{"GET /v1/evaluation/" + evalID1 + "/allocations", []string{"job", "run", "testdata/good.hcl"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " ")+" with odd "+tc.route, func(t *testing.T) {
			t.Parallel()
			f, addr := newFakeAgent(t)
			for route, v := range good {
				f.on(route, v)
			}
			for _, body := range jsonMutations(t, good[tc.route]) {
				f.onRaw(tc.route, body)
				runNoPanic(t, addr, fmt.Sprintf("%s answering %s", tc.route, body), tc.args...)
			}
		})
	}
}
