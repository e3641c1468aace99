package structs

import "time"

// RPCInfo is what a server needs to know about a request to route it: a
// write goes to the leader, a read too unless it allows a stale answer.
// QueryOptions and WriteRequest implement it, so every request that
// embeds one does.
type RPCInfo interface {
	IsRead() bool
	AllowStaleRead() bool
}

var (
	_ RPCInfo = QueryOptions{}
	_ RPCInfo = WriteRequest{}
)

// IsRead implements RPCInfo.
func (QueryOptions) IsRead() bool { return true }

// AllowStaleRead implements RPCInfo: any server may answer from its own
// state.
func (q QueryOptions) AllowStaleRead() bool { return q.AllowStale }

// IsRead implements RPCInfo.
func (WriteRequest) IsRead() bool { return false }

// AllowStaleRead implements RPCInfo: writes always go to the leader.
func (WriteRequest) AllowStaleRead() bool { return false }

// ReadIndexRequest asks the leader for the index a consistent read must
// wait for (Status.ReadIndex).
type ReadIndexRequest struct {
	QueryOptions
}

// ReadIndexResponse is the leader's latest state index, read after it
// confirmed that it still leads: a server whose state reached Index has
// every write acknowledged before the request.
type ReadIndexResponse struct {
	QueryMeta
}

// QueryWait reports whether the read blocks (MinQueryIndex set) and how
// long its caller lets it wait (0: as long as the server allows).
func (q QueryOptions) QueryWait() (blocking bool, wait time.Duration) {
	return q.MinQueryIndex > 0, q.MaxQueryTime
}

// AuthTokenSetter is a request that carries an ACL token: every request
// that embeds QueryOptions or WriteRequest.
type AuthTokenSetter interface {
	SetAuthToken(token string)
}

var (
	_ AuthTokenSetter = (*QueryOptions)(nil)
	_ AuthTokenSetter = (*WriteRequest)(nil)
)

// SetAuthToken implements AuthTokenSetter.
func (q *QueryOptions) SetAuthToken(token string) { q.AuthToken = token }

// SetAuthToken implements AuthTokenSetter.
func (w *WriteRequest) SetAuthToken(token string) { w.AuthToken = token }
