package structs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// Stream types: the first byte of every yamux stream (RPCTypeMultiplex
// sessions) picks what the stream carries.
const (
	// StreamTypeRPC: a net/rpc connection with the msgpack codec.
	StreamTypeRPC byte = 0x01
	// StreamTypeStreaming: one streaming call. The caller writes a
	// StreamRequest message and an arguments message; the callee answers
	// a StreamResponse message; when it carries no error the call goes
	// on with the method's own messages in both directions until either
	// side closes the stream.
	StreamTypeStreaming byte = 0x04
)

// MaxStreamMessage bounds one message on a streaming call (4 MiB): a
// peer that announces more is refused before anything is allocated.
const MaxStreamMessage = 4 << 20

// StreamRequest opens a streaming call.
type StreamRequest struct {
	Method string
	// NodeID is the node the call is for, once a server resolved it.
	NodeID string
	// Forwarded is set by a server that sends the call to another server
	// because the node is not connected to it; the other server does not
	// forward it again.
	Forwarded bool
	// AuthToken is the caller's ACL token secret. Every server on the way
	// checks it; it is never sent on to the node.
	AuthToken string
}

// StreamResponse answers a StreamRequest: Error (EncodeRPCError's text)
// is "" when the call goes on.
type StreamResponse struct {
	Error string
}

// WriteStreamMsg writes v as one message: a 4-byte big-endian length,
// then v in msgpack.
func WriteStreamMsg(w io.Writer, v any) error {
	var buf bytes.Buffer
	buf.Write([]byte{0, 0, 0, 0})
	if raw, ok := v.(RawMsg); ok {
		buf.Write(raw)
	} else if err := codec.NewEncoder(&buf, MsgpackHandle).Encode(v); err != nil {
		return fmt.Errorf("encode stream message: %w", err)
	}
	b := buf.Bytes()
	if len(b)-4 > MaxStreamMessage {
		return fmt.Errorf("stream message of %d bytes: %w (limit %d)", len(b)-4, ErrTooLarge, MaxStreamMessage)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	_, err := w.Write(b)
	return err
}

// RawMsg is a message already encoded in msgpack (ReadStreamMsgRaw's),
// which WriteStreamMsg sends as it is.
type RawMsg []byte

// MaxStreamRequest bounds a streaming call's request and arguments
// (64 KiB): they name an operation, not data.
const MaxStreamRequest = 64 << 10

// ReadStreamMsgRaw reads one message's msgpack bytes, of at most
// MaxStreamMessage.
func ReadStreamMsgRaw(r io.Reader) ([]byte, error) {
	return ReadStreamMsgRawLimit(r, MaxStreamMessage)
}

// ReadStreamMsgRawLimit reads one message of at most limit bytes. Memory
// grows with what arrives, not with what the peer announces.
func ReadStreamMsgRawLimit(r io.Reader, limit int) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if int64(n) > int64(limit) {
		return nil, fmt.Errorf("stream message of %d bytes: %w (limit %d)", n, ErrTooLarge, limit)
	}
	var buf bytes.Buffer
	buf.Grow(min(int(n), 64<<10))
	if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read stream message: %w", err)
	}
	return buf.Bytes(), nil
}

// ReadStreamMsg reads one message into v.
func ReadStreamMsg(r io.Reader, v any) error {
	return ReadStreamMsgLimit(r, v, MaxStreamMessage)
}

// ReadStreamMsgLimit reads one message of at most limit bytes into v.
func ReadStreamMsgLimit(r io.Reader, v any, limit int) error {
	b, err := ReadStreamMsgRawLimit(r, limit)
	if err != nil {
		return err
	}
	if err := Decode(b, v); err != nil {
		return fmt.Errorf("decode stream message: %w: %v", ErrInvalid, err)
	}
	return nil
}

// StartStream opens a streaming call on conn (after its stream type
// byte, when it has one): it sends the request and the arguments and
// reads the answer. It returns the callee's error, if any.
func StartStream(conn io.ReadWriter, req *StreamRequest, args any) error {
	if err := WriteStreamMsg(conn, req); err != nil {
		return err
	}
	if err := WriteStreamMsg(conn, args); err != nil {
		return err
	}
	var resp StreamResponse
	if err := ReadStreamMsg(conn, &resp); err != nil {
		return fmt.Errorf("%s: read answer: %w", req.Method, err)
	}
	return DecodeRPCErrorText(resp.Error)
}

// ErrNodeNotConnected: the node a client operation is for keeps no
// connection to this server (or, after forwarding, to any server).
var ErrNodeNotConnected = newSentinel("node-not-connected", CodeUnavailable, "node not connected")
