package structs

import (
	"errors"
	"fmt"
	"io"
	"net/rpc"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// RPCMaxMessage is the most bytes a server reads for one request (header
// and body) on an RPC connection or stream. The decoder bounds depth
// (MsgpackMaxDepth) and what one container declares, but not the sum: a
// peer, before any token is checked, could otherwise send a request of
// any size. The largest legitimate requests are jobs (at most
// JobMaxSizeCap) and batches of allocation updates.
const RPCMaxMessage = 64 << 20

// RPCSnapshotRestore is the one RPC whose request may pass
// RPCMaxMessage: it carries a whole state archive, at most
// SnapshotMaxUpload bytes (the HTTP API's bound on the upload too).
const (
	RPCSnapshotRestore = "Snapshot.Restore"
	SnapshotMaxUpload  = 1 << 30
)

// JobMaxSizeCap is the highest limits.job_max_size an agent accepts: a
// job must fit one RPC request with room to spare.
const JobMaxSizeCap = RPCMaxMessage / 2

// ErrRPCMessageTooLarge is the read error of a request over
// RPCMaxMessage; the connection is closed. (The codec reports it as
// text: match the message.)
var ErrRPCMessageTooLarge = errors.New("rpc request too large")

// NewRPCServerCodec returns the net/rpc server codec for one connection to
// the RPC port, after its protocol byte (RPCTypeRPC). It reads at most
// RPCMaxMessage bytes per request.
func NewRPCServerCodec(conn io.ReadWriteCloser) rpc.ServerCodec {
	return newBudgetCodec(conn, RPCMaxMessage)
}

func newBudgetCodec(conn io.ReadWriteCloser, max int64) rpc.ServerCodec {
	budget := &budgetConn{ReadWriteCloser: closeErrConn{conn}, max: max}
	return &budgetCodec{ServerCodec: codec.GoRpc.ServerCodec(budget, MsgpackHandle), conn: budget}
}

// budgetCodec refills its connection's read budget at each request.
type budgetCodec struct {
	rpc.ServerCodec
	conn *budgetConn
}

func (c *budgetCodec) ReadRequestHeader(r *rpc.Request) error {
	c.conn.left = c.conn.max // net/rpc reads one request at a time
	if err := c.ServerCodec.ReadRequestHeader(r); err != nil {
		return err
	}
	if r.ServiceMethod == RPCSnapshotRestore {
		c.conn.left = SnapshotMaxUpload // for its body, read next
	}
	return nil
}

// budgetConn fails reads once left bytes were read since the last refill.
// The codec reads through a buffer, so a request is charged a buffer's
// worth of the next one at most.
type budgetConn struct {
	io.ReadWriteCloser
	max, left int64
}

func (c *budgetConn) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("%w: over %d bytes", ErrRPCMessageTooLarge, c.max)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadWriteCloser.Read(p)
	c.left -= int64(n)
	return n, err
}

// NewRPCClientCodec returns the net/rpc client codec for a connection on
// which RPCTypeRPC has been written.
func NewRPCClientCodec(conn io.ReadWriteCloser) rpc.ClientCodec {
	return codec.GoRpc.ClientCodec(closeErrConn{conn}, MsgpackHandle)
}

// ErrRPCConnClosed is what a closed RPC connection's Close reports.
var ErrRPCConnClosed = errors.New("rpc connection closed")

// closeErrConn works around go-msgpack/v2's RPC codec (v2.1.5): once the
// codec is closed it answers every read with the error its Close got from
// the connection, which is nil after a clean close, so net/rpc's read loop
// never sees an error and spins on empty messages at full CPU. Close here
// always returns an error, so reads after it fail and the loop ends.
type closeErrConn struct{ io.ReadWriteCloser }

func (c closeErrConn) Close() error {
	c.ReadWriteCloser.Close()
	return ErrRPCConnClosed
}
