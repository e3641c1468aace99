package agent

import (
	"net/http"

	"github.com/droverhq/drover/structs"
)

// queueRoutes serves Drover's fair-share queues: /v1/queues (each with
// its usage and fair share) and /v1/queue/<name>.
func (h *httpAPI) queueRoutes(m *routeMux) {
	m.HandleFunc("GET /v1/queues", h.wrap(h.queuesList))
	m.HandleFunc("GET /v1/queue/{name}", h.wrap(h.queueRead))
	m.HandleFunc("PUT /v1/queue/{name}", h.wrap(h.queueUpsert))
	m.HandleFunc("POST /v1/queue/{name}", h.wrap(h.queueUpsert))
	m.HandleFunc("DELETE /v1/queue/{name}", h.wrap(h.queueDelete))
}

// queuesList answers []*structs.QueueStatus, sorted by name (?prefix
// filters; fair shares are over all queues).
func (h *httpAPI) queuesList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.QueueListResponse
	if err := h.read(w, r, structs.RPCQueueList, &structs.QueueListRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Queues), nil
}

// queueRead answers one *structs.QueueStatus.
func (h *httpAPI) queueRead(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	var reply structs.SingleQueueResponse
	if err := h.read(w, r, structs.RPCQueueGet, &structs.QueueSpecificRequest{Name: name, QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	if reply.Queue == nil {
		return nil, errorf(http.StatusNotFound, "queue %q not found", name)
	}
	return reply.Queue, nil
}

// queueBody is a Queue as a request body. Weight is a pointer to tell an
// explicit 0 (refused) from none (the default, 1).
type queueBody struct {
	structs.Queue
	Weight *int
}

// queueUpsert takes a Queue as the body; a name in the body must match
// the path's.
func (h *httpAPI) queueUpsert(w http.ResponseWriter, r *http.Request) (any, error) {
	var body queueBody
	if err := h.decodeBody(r, &body); err != nil {
		return nil, err
	}
	q := body.Queue
	if err := nameFromPath(r, &q.Name, "queue"); err != nil {
		return nil, err
	}
	if body.Weight != nil {
		if *body.Weight == 0 {
			return nil, errorf(http.StatusBadRequest, "invalid queue: queue %q: weight 0: want %d to %d (leave Weight out for the default, %d)",
				q.Name, structs.QueueMinWeight, structs.QueueMaxWeight, structs.QueueMinWeight)
		}
		q.Weight = *body.Weight
	}
	q.Canonicalize()
	if err := q.Validate(); err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid queue: %v", err)
	}
	req := &structs.QueueUpsertRequest{Queue: &q, WriteRequest: h.namespaceWriteRequest(r)}
	return h.writeRPC(w, r, structs.RPCQueueUpsert, req)
}

func (h *httpAPI) queueDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	req := &structs.QueueDeleteRequest{Name: r.PathValue("name"), WriteRequest: h.namespaceWriteRequest(r)}
	return h.writeRPC(w, r, structs.RPCQueueDelete, req)
}
