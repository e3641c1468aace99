package structs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func TestStreamMsgRoundTripAndLimits(t *testing.T) {
	var buf bytes.Buffer
	in := &StreamMsg{Stdout: []byte("hi"), ExitCode: 3, Exited: true}
	if err := WriteStreamMsg(&buf, in); err != nil {
		t.Fatal(err)
	}
	var out StreamMsg
	if err := ReadStreamMsg(&buf, &out); err != nil || string(out.Stdout) != "hi" || out.ExitCode != 3 || !out.Exited {
		t.Fatalf("round trip: %+v, %v", out, err)
	}

	head := func(n uint32) []byte { b := make([]byte, 4); binary.BigEndian.PutUint32(b, n); return b }
	tests := []struct {
		name  string
		input []byte
		limit int
		want  error
	}{
		{"over the limit, refused before reading", head(MaxStreamRequest + 1), MaxStreamRequest, ErrTooLarge},
		{"announced 4 MiB, sent 3 bytes", append(head(MaxStreamMessage), 1, 2, 3), MaxStreamMessage, io.ErrUnexpectedEOF},
		{"cut in the length", []byte{0, 0}, MaxStreamMessage, io.ErrUnexpectedEOF},
		{"nothing", nil, MaxStreamMessage, io.EOF},
		{"not msgpack", append(head(1), 0xc1), MaxStreamMessage, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m StreamMsg
			err := ReadStreamMsgLimit(bytes.NewReader(tt.input), &m, tt.limit)
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func FuzzReadStreamMsg(f *testing.F) {
	var buf bytes.Buffer
	_ = WriteStreamMsg(&buf, &StreamRequest{Method: RPCClientAllocExec, NodeID: "n"})
	_ = WriteStreamMsg(&buf, &ClientExecRequest{AllocID: "a", Command: []string{"sh"}})
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		var req StreamRequest
		if ReadStreamMsgLimit(r, &req, MaxStreamRequest) != nil {
			return
		}
		var m StreamMsg
		_ = ReadStreamMsgLimit(r, &m, MaxStreamRequest)
		var target ClientTarget
		_ = ReadStreamMsgLimit(r, &target, MaxStreamRequest)
	})
}
