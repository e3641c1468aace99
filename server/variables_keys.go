package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// How long a key fetch from another server may take, and how long the
// replicator waits before it tries again after a failure.
const (
	rootKeyFetchTimeout = 5 * time.Second
	rootKeyRetryWait    = 2 * time.Second
)

// serverOnlyMethods are the RPC methods only another server may call:
// the RPC layer refuses them on a client's session (rpc.go). Without
// mTLS the RPC port is trusted, as in Nomad; with verify_server_hostname
// only a server certificate opens a server connection.
var serverOnlyMethods = map[string]bool{structs.RPCRootKeyGet: true}

// serverCaller is a request that only another server may make: the RPC
// layer marks it when it arrives over a server's connection, and its
// endpoint refuses it unmarked (in process, or on a node's session).
type serverCaller interface{ MarkFromServer() }

// rootKeyEndpoint serves RootKey.Get: another server fetching a key.
type rootKeyEndpoint struct{ srv *Server }

// Get answers the root key KeyID from this server's keystore (nil when
// it does not have it). It is never forwarded.
func (e *rootKeyEndpoint) Get(args *structs.RootKeyGetRequest, reply *structs.RootKeyGetResponse) (err error) {
	defer e.srv.recoverPanic(structs.RPCRootKeyGet, &err)
	if !args.FromServer() {
		return fmt.Errorf("%w: only servers may fetch root keys", structs.ErrPermissionDenied)
	}
	ks, err := e.srv.keystore()
	if err != nil {
		return err
	}
	if k := ks.get(args.KeyID); k != nil {
		c := *k
		reply.Key = &c
	}
	e.srv.setQueryMeta(&reply.QueryMeta)
	return nil
}

// keystore returns this server's keystore, opened on first use.
func (s *Server) keystore() (*keystore, error) {
	s.keysOnce.Do(func() {
		s.keys, s.keysErr = openKeystore(s.config.DataDir + "/keystore")
	})
	return s.keys, s.keysErr
}

// activeRootKey returns the key new variables are sealed with. On the
// leader, the first call ever generates it: written to the keystore
// first, then its metadata through Raft, so that no variable is sealed
// with a key that could be lost with an unapplied entry.
func (s *Server) activeRootKey() (*structs.RootKey, error) {
	s.keyGenMu.Lock()
	defer s.keyGenMu.Unlock()
	meta, err := s.State().ActiveRootKeyMeta(nil)
	if err != nil {
		return nil, err
	}
	if meta != nil {
		return s.rootKey(meta.KeyID)
	}
	return s.newActiveRootKey(nil)
}

// newActiveRootKey generates a key, writes it to the keystore and then
// records it through Raft as the active one, the keys in deactivate
// becoming inactive. The caller holds keyGenMu.
func (s *Server) newActiveRootKey(deactivate []string) (*structs.RootKey, error) {
	ks, err := s.keystore()
	if err != nil {
		return nil, err
	}
	k, err := newRootKey(&structs.RootKeyMeta{
		KeyID: structs.GenerateUUID(), Algorithm: rootKeyAlgorithm,
		State: structs.RootKeyStateActive, CreateTime: time.Now().UnixNano(),
	})
	if err != nil {
		return nil, err
	}
	if err := ks.add(k); err != nil {
		return nil, err
	}
	req := &structs.RootKeyMetaUpsertRequest{Meta: k.Meta, Deactivate: deactivate}
	if _, err := s.raftApply(structs.RootKeyMetaUpsertRequestType, req); err != nil {
		return nil, fmt.Errorf("record root key: %w", err)
	}
	s.logger.Info("generated a variables root key", "key_id", k.Meta.KeyID, "deactivated", deactivate)
	return k, nil
}

// Rotate makes a new root key the active one: new variables are sealed
// with it, older ones stay readable with their own key. Management only.
func (e *rootKeyEndpoint) Rotate(args *structs.RootKeyRotateRequest, reply *structs.RootKeyRotateResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCRootKeyRotate, &err)
	if done, err := s.forward(structs.RPCRootKeyRotate, args, reply); done {
		return err
	}
	if err := s.requireManagement(args.AuthToken); err != nil {
		return err
	}
	switch {
	case args.Full:
		return fmt.Errorf("rotate root key: -full (re-encrypting every variable) is not supported by Drover: %w", structs.ErrInvalid)
	case args.Algorithm != "" && args.Algorithm != rootKeyAlgorithm:
		return fmt.Errorf("rotate root key: algorithm %q: only %s: %w", args.Algorithm, rootKeyAlgorithm, structs.ErrInvalid)
	}
	s.keyGenMu.Lock()
	defer s.keyGenMu.Unlock()
	metas, err := s.State().RootKeyMetas(nil)
	if err != nil {
		return err
	}
	var active []string
	for _, m := range metas {
		if m.State == structs.RootKeyStateActive {
			active = append(active, m.KeyID)
		}
	}
	if _, err := s.newActiveRootKey(active); err != nil {
		return err
	}
	stored, err := s.State().ActiveRootKeyMeta(nil)
	if err != nil {
		return err
	}
	reply.Key = stored
	reply.Index = stored.ModifyIndex
	return nil
}

// List answers the root keys' metadata (never a key). Management only.
func (e *rootKeyEndpoint) List(args *structs.RootKeyListRequest, reply *structs.RootKeyListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCRootKeyList, &err)
	if done, err := s.forward(structs.RPCRootKeyList, args, reply); done {
		return err
	}
	if err := s.requireManagement(args.AuthToken); err != nil {
		return err
	}
	return s.blockingTableRead(args.QueryOptions, &reply.QueryMeta, state.TableRootKeys, func(ws memdb.WatchSet, st *state.StateStore) error {
		metas, err := st.RootKeyMetas(ws)
		reply.Keys = make([]*structs.RootKeyMeta, 0, len(metas))
		for _, m := range metas {
			c := *m
			reply.Keys = append(reply.Keys, &c)
		}
		return err
	})
}

// rootKey returns the key id from the keystore, fetching it from the
// leader (then the other servers) when this server does not have it.
func (s *Server) rootKey(id string) (*structs.RootKey, error) {
	ks, err := s.keystore()
	if err != nil {
		return nil, err
	}
	if k := ks.get(id); k != nil {
		return k, nil
	}
	var errs []error
	for _, addr := range s.keyPeers() {
		k, err := s.fetchRootKey(addr, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := ks.add(k); err != nil {
			return nil, err
		}
		s.logger.Info("fetched a variables root key", "key_id", id, "from", addr)
		return k, nil
	}
	return nil, fmt.Errorf("root key %s: not in this server's keystore, nor fetched from a peer: %w: %w",
		id, structs.ErrUnavailable, errors.Join(errs...))
}

// keyPeers are the servers to ask for a key: the leader first.
func (s *Server) keyPeers() []string {
	self := s.advertise.String()
	var out []string
	if l := s.Leader(); l != "" && l != self {
		out = append(out, l)
	}
	for _, p := range s.Peers() {
		if p != self && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func (s *Server) fetchRootKey(addr, id string) (*structs.RootKey, error) {
	var reply structs.RootKeyGetResponse
	args := &structs.RootKeyGetRequest{KeyID: id, QueryOptions: structs.QueryOptions{AllowStale: true}}
	if err := s.pool.call(addr, rootKeyFetchTimeout, structs.RPCRootKeyGet, args, &reply); err != nil {
		return nil, fmt.Errorf("server %s: %w", addr, err)
	}
	if reply.Key == nil {
		return nil, fmt.Errorf("server %s: does not have it", addr)
	}
	if err := checkRootKey(reply.Key, id); err != nil {
		return nil, fmt.Errorf("server %s: %w", addr, err)
	}
	return reply.Key, nil
}

// replicateRootKeys fetches every root key whose metadata Raft holds and
// this server's keystore does not, as soon as the metadata arrives, so
// that a server that becomes leader can decrypt and a follower serves
// stale reads. It runs until ctx ends.
func (s *Server) replicateRootKeys(ctx context.Context) {
	for {
		st := s.State()
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		metas, err := st.RootKeyMetas(ws)
		missing := false
		if err == nil {
			for _, m := range metas {
				if _, ferr := s.rootKey(m.KeyID); ferr != nil {
					missing = true
					s.logger.Debug("root key not replicated yet", "key_id", m.KeyID, "error", ferr)
				}
			}
		}
		if err != nil || missing {
			select {
			case <-ctx.Done():
				return
			case <-time.After(rootKeyRetryWait):
			}
			continue
		}
		if ws.WatchCtx(ctx) != nil {
			return
		}
	}
}

// sealVariable encrypts v's items under the active root key.
func (s *Server) sealVariable(v *structs.VariableDecrypted) (*structs.VariableEncrypted, error) {
	k, err := s.activeRootKey()
	if err != nil {
		return nil, err
	}
	plain, err := json.Marshal(v.Items)
	if err != nil {
		return nil, fmt.Errorf("encode items: %w", err)
	}
	nonce, sealed, err := seal(k.Key, plain, variableAAD(v.Namespace, v.Path))
	if err != nil {
		return nil, err
	}
	return &structs.VariableEncrypted{VariableMetadata: v.VariableMetadata, KeyID: k.Meta.KeyID, Nonce: nonce, Data: sealed}, nil
}

// openVariable decrypts a sealed variable.
func (s *Server) openVariable(v *structs.VariableEncrypted) (*structs.VariableDecrypted, error) {
	k, err := s.rootKey(v.KeyID)
	if err != nil {
		return nil, err
	}
	plain, err := openSealed(k.Key, v.Nonce, v.Data, variableAAD(v.Namespace, v.Path))
	if err != nil {
		return nil, fmt.Errorf("variable %q: %w", v.Path, err)
	}
	out := &structs.VariableDecrypted{VariableMetadata: v.VariableMetadata}
	if err := json.Unmarshal(plain, &out.Items); err != nil {
		return nil, fmt.Errorf("variable %q: decode items: %w", v.Path, err)
	}
	return out, nil
}

// startKeyReplication runs replicateRootKeys until the server shuts down.
func (s *Server) startKeyReplication() {
	ctx, cancel := context.WithCancel(context.Background())
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		defer cancel()
		<-s.shutdownCh
	}()
	go func() {
		defer s.wg.Done()
		s.replicateRootKeys(ctx)
	}()
}
