package structs

import (
	"errors"
	"io"
	"net/rpc"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// NewRPCServerCodec returns the net/rpc server codec for one connection to
// the RPC port, after its protocol byte (RPCTypeRPC).
func NewRPCServerCodec(conn io.ReadWriteCloser) rpc.ServerCodec {
	return codec.GoRpc.ServerCodec(closeErrConn{conn}, MsgpackHandle)
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
