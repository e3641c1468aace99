package agent

import (
	"net/http"

	"github.com/droverhq/drover/structs"
)

func (h *httpAPI) searchRoutes(m *routeMux) {
	for _, method := range []string{"PUT", "POST"} {
		m.HandleFunc(method+" /v1/search", h.wrap(h.prefixSearch))
		m.HandleFunc(method+" /v1/search/fuzzy", h.wrap(h.fuzzySearch))
	}
}

// searchBody is the body of /v1/search and /v1/search/fuzzy: Nomad's
// SearchRequest and FuzzySearchRequest, whose embedded query options
// may carry the namespace.
type searchBody struct {
	Prefix, Text, Context, Namespace string
}

// searchQuery is the request's query options, with the body's namespace
// when the URL names none.
func (h *httpAPI) searchQuery(r *http.Request) (searchBody, structs.QueryOptions, error) {
	var body searchBody
	o, err := parseQuery(r)
	if err != nil {
		return body, o, err
	}
	if err := h.decodeBody(r, &body); err != nil {
		return body, o, err
	}
	if r.URL.Query().Get("namespace") == "" && body.Namespace != "" {
		o.Namespace = body.Namespace
	}
	return body, o, nil
}

func (h *httpAPI) prefixSearch(w http.ResponseWriter, r *http.Request) (any, error) {
	body, o, err := h.searchQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.SearchResponse
	args := &structs.SearchRequest{Prefix: body.Prefix, Context: body.Context, QueryOptions: o}
	if err := h.read(w, r, structs.RPCSearchPrefix, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return &reply, nil
}

func (h *httpAPI) fuzzySearch(w http.ResponseWriter, r *http.Request) (any, error) {
	body, o, err := h.searchQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.FuzzySearchResponse
	args := &structs.FuzzySearchRequest{Text: body.Text, Context: body.Context, QueryOptions: o}
	if err := h.read(w, r, structs.RPCSearchFuzzy, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return &reply, nil
}
