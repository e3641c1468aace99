package server

import (
	"sync"

	"github.com/hashicorp/yamux"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// nodeConnMethods are the calls only a node's own client makes, with the
// node's ID and secret in their arguments: a node session that carries
// one of them, with the secret the servers hold for that node, is that
// node's way back, for client operations (stream.go).
var nodeConnMethods = map[string]func(args any) (id, secret string){
	structs.RPCNodeRegister: func(args any) (string, string) {
		if a, ok := args.(*structs.NodeRegisterRequest); ok && a.Node != nil {
			return a.Node.ID, a.Node.SecretID
		}
		return "", ""
	},
	structs.RPCNodeGetAllocs: func(args any) (string, string) {
		if a, ok := args.(*structs.NodeSpecificRequest); ok {
			return a.NodeID, a.SecretID
		}
		return "", ""
	},
}

// nodeConns maps the nodes connected to this server to their sessions.
type nodeConns struct {
	mu    sync.Mutex
	conns map[string]*yamux.Session
}

func newNodeConns() *nodeConns { return &nodeConns{conns: map[string]*yamux.Session{}} }

// noteCall records sess as the node's after a successful node call
// that carries the node's secret (the endpoints checked it: a node that
// is registered already must present the secret it registered with).
func (c *nodeConns) noteCall(method string, args any, sess *yamux.Session, st *state.StateStore) {
	nodeOf, ok := nodeConnMethods[method]
	if !ok {
		return
	}
	id, secret := nodeOf(args)
	if id == "" || secret == "" || sess.IsClosed() {
		return
	}
	node, err := st.NodeByID(nil, id)
	if err != nil || node == nil || node.SecretID != secret {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conns[id] = sess
}

// get returns the node's open session, or nil.
func (c *nodeConns) get(nodeID string) *yamux.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	sess := c.conns[nodeID]
	if sess != nil && sess.IsClosed() {
		delete(c.conns, nodeID)
		return nil
	}
	return sess
}

// dropSession forgets every node whose session sess was.
func (c *nodeConns) dropSession(sess *yamux.Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, s := range c.conns {
		if s == sess {
			delete(c.conns, id)
		}
	}
}
