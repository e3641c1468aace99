// Package server is the server agent's wiring: it opens Raft (BoltDB log,
// file snapshots, a network transport multiplexed on the RPC port), serves
// the RPC endpoints (Status, Node, Job) over TCP and in process, and runs
// the leader's duties: the eval broker and blocked evals, the plan
// applier, scheduler workers, node heartbeat timers, and keeping the Raft
// configuration in step with the servers' serf LAN pool (serf.go,
// membership.go), through which servers find each other, bootstrap a
// cluster of bootstrap_expect servers, and notice failures.
//
// # The RPC port
//
// One TCP port carries every server's traffic. The first byte of a
// connection picks the protocol (structs.RPCType*):
//
//	0x01 RPCTypeRPC        net/rpc with the msgpack codec (tools, tests)
//	0x02 RPCTypeRaft       hashicorp/raft's network transport (raft.go)
//	0x03 RPCTypeMultiplex  a hashicorp/yamux session; each stream starts
//	                       with its own type byte: 0x01 a net/rpc
//	                       connection, 0x04 one streaming call
//	0x04 RPCTypeTLS        a TLS handshake, then one of the others
//	0x05 RPCTypeNodeMultiplex  the same as 0x03, from a node's client:
//	                       the servers open streams back on it
//
// With rpc TLS on (Config.TLS, rpc_tls.go) every connection is 0x04:
// mutual TLS with the agents' CA, plaintext refused. Servers dial each
// other (Raft, the pool, bootstrap checks) through dialRPC, which
// verifies the peer's server certificate; a peer that opens a Raft, a
// forwarding or a single-call connection must present a server
// certificate (server.<region>.drover) when verify_server_hostname is
// on, while a node's session takes any certificate from the CA.
//
// Gossip encryption is serf's keyring (serf_keyring.go): the key from
// Config.EncryptKey, or the keyring file kept under DataDir, changed on
// every server at once through the Keyring endpoint.
//
// Servers call each other on multiplexed sessions: the connection pool
// (pool.go) keeps one session per peer, opens a stream per call, and
// closes a session whose call failed in transport. Clients keep one
// session to a server too (0x05), and the node session a node's own
// calls arrive on with its secret (Node.Register, Node.GetAllocs) is the
// way back to that node (nodeconns.go); a session from another server,
// which forwards node calls, never is. Raft keeps its own connections of type 0x02 on the
// same port.
//
// RPC is dispatched by this package (serveCodec), not net/rpc's server,
// so that an error's code and sentinel travel with its text
// (structs.EncodeRPCError); callers decode them (structs.DecodeRPCError)
// and errors.Is holds across machines.
//
// # Client operations
//
// Logs, files, exec, stats, restart and signal of an allocation are
// streaming calls (stream.go): whichever server receives one resolves
// the allocation to its node and relays the call, byte for byte, on a
// stream it opens on that node's session, or, when the node is connected
// to another server, on a stream to that server (which does not forward
// again). The HTTP API starts them through Server.StreamCall in process,
// or through its client's session on a client-only agent.
//
// # Event stream
//
// Every server, leader or follower, has its own event buffer
// (server/events): the FSM publishes the events of each entry it applied
// there, and Event.Stream (endpoint_event.go), a streaming call served by
// the server that receives it, never forwarded, writes the frames a
// subscription selects, each event checked against the caller's token as
// it is sent.
//
// # Forwarding and retries
//
// Every endpoint but the Status ones that report this server's own view
// starts with s.forward (forward.go). A write, or a read
// without AllowStale, is served by the leader: a follower sends it there
// on the pool and returns the leader's answer. A stale read is served
// from the local state, with QueryMeta saying how long ago this server
// heard from the leader and whether it knows one. While there is no
// leader, or the one asked answers that it no longer leads, the request
// waits with backoff and tries again for up to Config.RPCHoldTimeout
// (5 s), then fails with structs.ErrNoLeader. A request whose outcome is
// unknown (the leader died or lost its leadership after it took it) is
// tried again only if it is a read or an idempotent write
// (idempotentWrites); other writes fail with structs.ErrOutcomeUnknown,
// so no caller is told "done" for a lost write. In-process calls
// (Server.RPC, used by the HTTP API) go through the same path and are
// also retried when this server lost its leadership under them.
// Server.ReadBarrier gives a follower the leader's freshness where a
// server reads its own state for a request (routing a client operation):
// it asks the leader for its latest index (Status.ReadIndex, after a
// quorum check) and waits for the local state to reach it.
//
// Decisions live in the packages it wires (state, fsm, broker, plan,
// scheduler); this package moves requests and evaluations between them and
// owns every goroutine it starts. It must not import the client packages:
// clients meet the server only over the wire.
package server
