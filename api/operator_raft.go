package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/droverhq/drover/structs"
)

// RaftServer is one server of the Raft configuration.
type RaftServer = structs.RaftServer

// RaftConfiguration is the Raft configuration.
type RaftConfiguration = structs.RaftConfigurationResponse

// RaftGetConfiguration returns the Raft configuration: every server with
// its ID, address and whether it leads and votes.
func (o *Operator) RaftGetConfiguration(ctx context.Context, q *QueryOptions) (*RaftConfiguration, error) {
	var out RaftConfiguration
	if _, err := o.c.query(ctx, "/v1/operator/raft/configuration", q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RaftRemovePeerByAddress removes the Raft peer at the RPC address
// ("ip:port").
func (o *Operator) RaftRemovePeerByAddress(ctx context.Context, address string, w *WriteOptions) error {
	return o.raftRemovePeer(ctx, url.Values{"address": {address}}, w)
}

// RaftRemovePeerByID removes the Raft peer with the server ID.
func (o *Operator) RaftRemovePeerByID(ctx context.Context, id string, w *WriteOptions) error {
	return o.raftRemovePeer(ctx, url.Values{"id": {id}}, w)
}

func (o *Operator) raftRemovePeer(ctx context.Context, params url.Values, w *WriteOptions) error {
	_, err := o.c.write(ctx, http.MethodDelete, "/v1/operator/raft/peer", nil, nil, w, params)
	return err
}
