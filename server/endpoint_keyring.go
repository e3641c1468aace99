package server

import (
	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
)

// keyringEndpoint serves the "Keyring" RPC methods: the servers' gossip
// encryption keys. A call is not forwarded to the leader: the server
// that receives it asks every server through serf.
type keyringEndpoint struct{ srv *Server }

// List answers each key with how many servers hold it. Every keyring
// call needs agent write, as in Nomad: the answer holds the keys.
func (e *keyringEndpoint) List(args *structs.KeyringRequest, reply *structs.KeyringResponse) (err error) {
	defer e.srv.recoverPanic(structs.RPCKeyringList, &err)
	if _, err := e.srv.authorize(args.AuthToken, (*acl.ACL).AllowAgentWrite); err != nil {
		return err
	}
	return e.srv.keyringOp("list", "", reply)
}

// Install adds a key to every server's keyring (not yet used to send).
func (e *keyringEndpoint) Install(args *structs.KeyringRequest, reply *structs.KeyringResponse) (err error) {
	defer e.srv.recoverPanic(structs.RPCKeyringInstall, &err)
	if _, err := e.srv.authorize(args.AuthToken, (*acl.ACL).AllowAgentWrite); err != nil {
		return err
	}
	return e.srv.keyringOp("install", args.Key, reply)
}

// Use makes an installed key the one every server encrypts with.
func (e *keyringEndpoint) Use(args *structs.KeyringRequest, reply *structs.KeyringResponse) (err error) {
	defer e.srv.recoverPanic(structs.RPCKeyringUse, &err)
	if _, err := e.srv.authorize(args.AuthToken, (*acl.ACL).AllowAgentWrite); err != nil {
		return err
	}
	return e.srv.keyringOp("use", args.Key, reply)
}

// Remove drops a key that is not the primary from every server.
func (e *keyringEndpoint) Remove(args *structs.KeyringRequest, reply *structs.KeyringResponse) (err error) {
	defer e.srv.recoverPanic(structs.RPCKeyringRemove, &err)
	if _, err := e.srv.authorize(args.AuthToken, (*acl.ACL).AllowAgentWrite); err != nil {
		return err
	}
	return e.srv.keyringOp("remove", args.Key, reply)
}
