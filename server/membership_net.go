package server

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// dialPeer opens a TCP connection to another server's RPC or serf address.
// Every server-to-server connection (Raft, RPC forwarding, bootstrap
// checks, serf streams) must be dialed here so that the test partition
// hook (Config.partition) sees it; the caller writes its protocol byte.
func (s *Server) dialPeer(addr string, timeout time.Duration) (net.Conn, error) {
	return s.config.partition.dial(addr, timeout)
}

// peerFilter is the test-only hook that cuts a server off from chosen
// peers (the cluster harness's Partition and Heal). It is nil outside
// tests, where it costs one nil check per dial and per serf packet.
//
// On loopback every peer dials from 127.0.0.1, so a server cannot tell
// which peer an accepted TCP connection comes from. Instead both sides of
// a partition block each other's addresses (the harness does that): each
// refuses its own dials to a blocked address and closes the connections
// it dialed to one (so Raft's pooled connections and forwarding sessions
// break at once), and serf's UDP packets are dropped on send and, by
// their source address, which is the sender's serf port, on receipt.
type peerFilter struct {
	mu      sync.Mutex
	blocked map[string]bool          // "ip:port" of peers' RPC and serf addresses
	conns   map[*filteredConn]string // dialed connections, by remote address
}

func newPeerFilter() *peerFilter {
	return &peerFilter{blocked: map[string]bool{}, conns: map[*filteredConn]string{}}
}

// block refuses traffic to and from addrs from now on and closes the
// connections dialed to them.
func (f *peerFilter) block(addrs ...string) {
	f.mu.Lock()
	var cut []*filteredConn
	for _, a := range addrs {
		f.blocked[a] = true
	}
	for c, a := range f.conns {
		if f.blocked[a] {
			cut = append(cut, c)
		}
	}
	f.mu.Unlock()
	for _, c := range cut {
		_ = c.Close()
	}
}

// unblock lets traffic to and from addrs through again.
func (f *peerFilter) unblock(addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range addrs {
		delete(f.blocked, a)
	}
}

// allows reports whether traffic with addr may pass; a nil filter allows
// everything.
func (f *peerFilter) allows(addr string) bool {
	if f == nil {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.blocked[addr]
}

// dial dials addr unless it is blocked, and tracks the connection so that
// a later block closes it. A nil filter just dials.
func (f *peerFilter) dial(addr string, timeout time.Duration) (net.Conn, error) {
	if f == nil {
		return net.DialTimeout("tcp", addr, timeout)
	}
	if !f.allows(addr) {
		return nil, fmt.Errorf("dial %s: partitioned (test hook)", addr)
	}
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	fc := &filteredConn{Conn: conn, f: f}
	f.mu.Lock()
	f.conns[fc] = addr
	blocked := f.blocked[addr]
	f.mu.Unlock()
	if blocked { // blocked while dialing
		_ = fc.Close()
		return nil, fmt.Errorf("dial %s: partitioned (test hook)", addr)
	}
	return fc, nil
}

// filteredConn is a dialed connection that leaves its filter's table when
// closed.
type filteredConn struct {
	net.Conn
	f *peerFilter
}

func (c *filteredConn) Close() error {
	c.f.mu.Lock()
	delete(c.f.conns, c)
	c.f.mu.Unlock()
	return c.Conn.Close()
}

// filteredTransport is serf's memberlist transport with the peer filter
// applied: packets to or from blocked addresses are dropped and streams to
// them refused. It owns one goroutine, which forwards the allowed
// incoming packets and stops when the transport shuts down.
type filteredTransport struct {
	*memberlist.NetTransport
	f        *peerFilter
	packetCh chan *memberlist.Packet
	stopCh   chan struct{}
	done     chan struct{}
}

var _ memberlist.NodeAwareTransport = (*filteredTransport)(nil)

func newFilteredTransport(nt *memberlist.NetTransport, f *peerFilter) *filteredTransport {
	t := &filteredTransport{
		NetTransport: nt, f: f,
		packetCh: make(chan *memberlist.Packet),
		stopCh:   make(chan struct{}),
		done:     make(chan struct{}),
	}
	go t.forwardPackets()
	return t
}

func (t *filteredTransport) forwardPackets() {
	defer close(t.done)
	in := t.NetTransport.PacketCh()
	for {
		select {
		case <-t.stopCh:
			return
		case p := <-in:
			if !t.f.allows(p.From.String()) {
				continue
			}
			select {
			case t.packetCh <- p:
			case <-t.stopCh:
				return
			}
		}
	}
}

// PacketCh implements memberlist.Transport.
func (t *filteredTransport) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

// WriteTo implements memberlist.Transport; a packet to a blocked address
// is lost, as on a cut network.
func (t *filteredTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress implements memberlist.NodeAwareTransport.
func (t *filteredTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if !t.f.allows(a.Addr) {
		return time.Now(), nil
	}
	return t.NetTransport.WriteToAddress(b, a)
}

// DialTimeout implements memberlist.Transport.
func (t *filteredTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.f.dial(addr, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (t *filteredTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return t.f.dial(a.Addr, timeout)
}

// Shutdown implements memberlist.Transport: it stops the packet forwarder
// and the network transport.
func (t *filteredTransport) Shutdown() error {
	err := t.NetTransport.Shutdown()
	close(t.stopCh)
	<-t.done
	return err
}
