package server

import (
	"cmp"
	"slices"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// searchEndpoint answers Nomad's /v1/search (IDs by prefix) and
// /v1/search/fuzzy (names by substring), showing only what the token may
// read.
type searchEndpoint struct{ srv *Server }

// searchScope is what a search may look through: the contexts the token
// may read, and which namespaces' objects of each it may see.
type searchScope struct {
	contexts []string
	acl      *acl.ACL
	ns       string
}

// Contexts each search looks through under "all", in answer order.
var (
	prefixContexts = []string{structs.SearchJobs, structs.SearchEvals, structs.SearchAllocs, structs.SearchNodes, structs.SearchNamespaces}
	fuzzyContexts  = []string{structs.SearchJobs, structs.SearchGroups, structs.SearchTasks, structs.SearchAllocs, structs.SearchNodes, structs.SearchNamespaces}
)

// searchCapability is the namespace capability a context's objects need
// ("" for contexts not in namespaces).
func searchCapability(ctx string) string {
	switch ctx {
	case structs.SearchJobs, structs.SearchGroups, structs.SearchTasks:
		return acl.CapListJobs
	case structs.SearchEvals, structs.SearchAllocs:
		return acl.CapReadJob
	}
	return ""
}

// allowed reports whether sc's token may see obj's namespace in ctx.
func (sc *searchScope) allowed(ctx, ns string) bool {
	switch ctx {
	case structs.SearchNodes:
		return sc.acl.AllowNodeRead()
	case structs.SearchNamespaces:
		return sc.acl.AllowNamespace(ns)
	}
	return sc.acl.AllowNamespaceOperation(ns, searchCapability(ctx))
}

// scope resolves the token and the contexts a search of want may look
// through: every readable one of known for "all" (refused when none is),
// else want itself, refused when the token may not read it.
func (s *Server) searchScope(method, token, want, ns string, known []string) (*searchScope, error) {
	// The token first: a bad one is refused before the request is judged.
	a, _, err := s.resolveToken(token)
	if err != nil {
		return nil, err
	}
	if len(want) > structs.SearchMaxText {
		return nil, structs.KindErrorf(structs.ErrInvalid, "%s: context is %d bytes, over %d", method, len(want), structs.SearchMaxText)
	}
	if want == "" {
		want = structs.SearchAll
	}
	if want != structs.SearchAll && !slices.Contains(known, want) {
		return nil, structs.KindErrorf(structs.ErrInvalid, "%s: context %q is not one Drover searches (%s, or all)", method, want, strings.Join(known, ", "))
	}
	sc := &searchScope{acl: a, ns: ns}
	for _, ctx := range known {
		if want != structs.SearchAll && ctx != want {
			continue
		}
		// The namespaces context lists them all: any readable one will do.
		in := ns
		if ctx == structs.SearchNamespaces {
			in = "*"
		}
		if sc.allowed(ctx, in) {
			sc.contexts = append(sc.contexts, ctx)
		}
	}
	if len(sc.contexts) == 0 {
		return nil, errPermissionDenied
	}
	return sc, nil
}

// PrefixSearch returns, per context, the IDs (names of namespaces)
// starting with Prefix that the token may read, at most
// structs.SearchLimit each.
func (e *searchEndpoint) PrefixSearch(args *structs.SearchRequest, reply *structs.SearchResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCSearchPrefix, &err)
	if done, err := s.forward(structs.RPCSearchPrefix, args, reply); done {
		return err
	}
	if len(args.Prefix) > structs.SearchMaxText {
		return structs.KindErrorf(structs.ErrInvalid, "%s: prefix is %d bytes, over %d", structs.RPCSearchPrefix, len(args.Prefix), structs.SearchMaxText)
	}
	sc, err := s.searchScope(structs.RPCSearchPrefix, args.AuthToken, args.Context, queryNamespace(args.QueryOptions), prefixContexts)
	if err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		reply.Matches = map[string][]string{}
		reply.Truncations = map[string]bool{}
		for _, ctx := range sc.contexts {
			ids, err := prefixMatches(ws, st, sc, ctx, args.Prefix)
			if err != nil {
				return 0, err
			}
			reply.Matches[ctx], reply.Truncations[ctx] = truncate(ids)
		}
		return tablesIndex(st, searchTables)
	})
}

var searchTables = []string{state.TableJobs, state.TableEvals, state.TableAllocs, state.TableNodes, state.TableNamespaces}

// truncate keeps the first structs.SearchLimit of list and says whether
// it cut any.
func truncate[T any](list []T) ([]T, bool) {
	if len(list) > structs.SearchLimit {
		return list[:structs.SearchLimit], true
	}
	if list == nil {
		list = []T{}
	}
	return list, false
}

// prefixMatches lists the IDs in one context that start with prefix and
// that sc may see, sorted, one past the limit at most.
func prefixMatches(ws memdb.WatchSet, st *state.StateStore, sc *searchScope, ctx, prefix string) ([]string, error) {
	var ids []string
	add := func(ns, id string) bool {
		if sc.allowed(ctx, ns) {
			ids = append(ids, id)
		}
		return len(ids) > structs.SearchLimit
	}
	switch ctx {
	case structs.SearchJobs:
		jobs, err := st.JobsByIDPrefix(ws, sc.ns, prefix)
		for _, j := range jobs {
			if add(j.Namespace, j.ID) {
				break
			}
		}
		return ids, err
	case structs.SearchEvals:
		evals, err := st.EvalsByIDPrefix(ws, sc.ns, prefix)
		for _, ev := range evals {
			if add(ev.Namespace, ev.ID) {
				break
			}
		}
		return ids, err
	case structs.SearchAllocs:
		allocs, err := st.AllocsByIDPrefix(ws, sc.ns, prefix)
		for _, a := range allocs {
			if add(a.Namespace, a.ID) {
				break
			}
		}
		return ids, err
	case structs.SearchNodes:
		nodes, err := st.NodesByIDPrefix(ws, prefix)
		for _, n := range nodes {
			if add("", n.ID) {
				break
			}
		}
		return ids, err
	case structs.SearchNamespaces:
		nss, err := st.Namespaces(ws, prefix)
		for _, n := range nss {
			if add(n.Name, n.Name) {
				break
			}
		}
		return ids, err
	}
	return nil, nil
}

// FuzzySearch returns, per context, the objects whose name contains Text
// (case-insensitively) that the token may read, best first: an earlier
// match, then a shorter name, then by name.
func (e *searchEndpoint) FuzzySearch(args *structs.FuzzySearchRequest, reply *structs.FuzzySearchResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCSearchFuzzy, &err)
	if done, err := s.forward(structs.RPCSearchFuzzy, args, reply); done {
		return err
	}
	if len(args.Text) > structs.SearchMaxText {
		return structs.KindErrorf(structs.ErrInvalid, "%s: text is %d bytes, over %d", structs.RPCSearchFuzzy, len(args.Text), structs.SearchMaxText)
	}
	sc, err := s.searchScope(structs.RPCSearchFuzzy, args.AuthToken, args.Context, queryNamespace(args.QueryOptions), fuzzyContexts)
	if err != nil {
		return err
	}
	if strings.TrimSpace(args.Text) == "" {
		return errMissing(structs.RPCSearchFuzzy, "text")
	}
	text := strings.ToLower(args.Text)
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		f := &fuzzyCollector{sc: sc, text: text, matches: map[string][]scoredMatch{}}
		if err := f.collect(ws, st); err != nil {
			return 0, err
		}
		reply.Matches = map[string][]structs.FuzzyMatch{}
		reply.Truncations = map[string]bool{}
		for _, ctx := range sc.contexts {
			reply.Matches[ctx], reply.Truncations[ctx] = truncate(f.sorted(ctx))
		}
		return tablesIndex(st, searchTables)
	})
}

type scoredMatch struct {
	at int
	m  structs.FuzzyMatch
}

// fuzzyCollector gathers fuzzy matches per context.
type fuzzyCollector struct {
	sc      *searchScope
	text    string
	matches map[string][]scoredMatch
}

func (f *fuzzyCollector) wants(ctx string) bool { return slices.Contains(f.sc.contexts, ctx) }

// add records name in ctx when it contains the text and sc may see ns.
func (f *fuzzyCollector) add(ctx, ns, name string, scope ...string) {
	at := strings.Index(strings.ToLower(name), f.text)
	if at < 0 || !f.wants(ctx) || !f.sc.allowed(ctx, ns) {
		return
	}
	f.matches[ctx] = append(f.matches[ctx], scoredMatch{at: at, m: structs.FuzzyMatch{ID: name, Scope: scope}})
}

func (f *fuzzyCollector) collect(ws memdb.WatchSet, st *state.StateStore) error {
	if f.wants(structs.SearchJobs) || f.wants(structs.SearchGroups) || f.wants(structs.SearchTasks) {
		jobs, err := st.Jobs(ws, f.sc.ns)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			f.add(structs.SearchJobs, j.Namespace, j.Name, j.Namespace, j.ID)
			for _, tg := range j.TaskGroups {
				f.add(structs.SearchGroups, j.Namespace, tg.Name, j.Namespace, j.ID)
				for _, t := range tg.Tasks {
					f.add(structs.SearchTasks, j.Namespace, t.Name, j.Namespace, j.ID, tg.Name)
				}
			}
		}
	}
	if f.wants(structs.SearchAllocs) {
		allocs, err := st.Allocs(ws, f.sc.ns)
		if err != nil {
			return err
		}
		for _, a := range allocs {
			f.add(structs.SearchAllocs, a.Namespace, a.Name, a.Namespace, a.ID)
		}
	}
	if f.wants(structs.SearchNodes) {
		nodes, err := st.Nodes(ws)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			f.add(structs.SearchNodes, "", n.Name, n.ID)
		}
	}
	if f.wants(structs.SearchNamespaces) {
		nss, err := st.Namespaces(ws, "")
		if err != nil {
			return err
		}
		for _, n := range nss {
			f.add(structs.SearchNamespaces, n.Name, n.Name)
		}
	}
	return nil
}

// sorted is ctx's matches, best first.
func (f *fuzzyCollector) sorted(ctx string) []structs.FuzzyMatch {
	ms := f.matches[ctx]
	slices.SortFunc(ms, func(a, b scoredMatch) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(len(a.m.ID), len(b.m.ID)), strings.Compare(a.m.ID, b.m.ID),
			slices.Compare(a.m.Scope, b.m.Scope))
	})
	out := make([]structs.FuzzyMatch, len(ms))
	for i, m := range ms {
		out[i] = m.m
	}
	return out
}
