package structs

import (
	"errors"
	"fmt"
	"net/rpc"
	"testing"
)

// wire is err as a caller on another machine gets it.
func wire(err error) error { return DecodeRPCError(rpc.ServerError(EncodeRPCError(err))) }

func TestRPCErrorsKeepCodeAndSentinel(t *testing.T) {
	own := NewCodedError(CodeConflict, "task not running")
	tests := []struct {
		name     string
		err      error
		code     ErrCode
		sentinel error
	}{
		{"not found", fmt.Errorf("job %q: %w", "x", ErrNotFound), CodeNotFound, ErrNotFound},
		{"invalid wrapping another", fmt.Errorf("%w: %w", ErrInvalid, errors.New("count: must be positive")), CodeBadRequest, ErrInvalid},
		{"unknown node", fmt.Errorf("node n1: %w", ErrUnknownNode), CodeNotFound, ErrUnknownNode},
		{"own coded error", fmt.Errorf("restart: %w", own), CodeConflict, nil},
		{"own coded over a sentinel", fmt.Errorf("%w: %w", own, ErrNotLeader), CodeConflict, ErrNotLeader},
		{"plain", errors.New("boom"), CodeInternal, nil},
		{"twice over the wire", wire(fmt.Errorf("hop: %w", ErrOutcomeUnknown)), CodeOutcomeUnknown, ErrOutcomeUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wire(tt.err)
			if got.Error() != tt.err.Error() {
				t.Errorf("text = %q, want %q", got.Error(), tt.err.Error())
			}
			if !IsRemote(got) {
				t.Errorf("IsRemote = false")
			}
			if tt.sentinel != nil && !errors.Is(got, tt.sentinel) {
				t.Errorf("errors.Is(%v) = false", tt.sentinel)
			}
			if tt.sentinel == nil && CodeOf(got) != tt.code {
				t.Errorf("code = %v, want %v", CodeOf(got), tt.code)
			}
		})
	}
}

// TestRPCErrorTextIsNotAClass: a message that reads like another error,
// or a forged code, does not make it one; only the sentinel does.
func TestRPCErrorTextIsNotAClass(t *testing.T) {
	got := wire(fmt.Errorf("job named %q: %w", "not the leader", ErrInvalid))
	if errors.Is(got, ErrNotLeader) || !errors.Is(got, ErrInvalid) {
		t.Errorf("a message quoting another error changed its class: %v", got)
	}
	forged := DecodeRPCError(rpc.ServerError(rpcErrorMark + "0/not-found\x1eno"))
	if !errors.Is(forged, ErrNotFound) || CodeOf(forged) != CodeNotFound {
		t.Errorf("code and sentinel disagree: %v is %v", forged, CodeOf(forged))
	}
	if e := DecodeRPCError(rpc.ServerError("not the leader")); CodeOf(e) != CodeInternal || errors.Is(e, ErrNotLeader) {
		t.Errorf("an uncoded text was classified: %v", CodeOf(e))
	}
}

func FuzzDecodeRPCError(f *testing.F) {
	f.Add(EncodeRPCError(fmt.Errorf("x: %w", ErrNotFound)))
	f.Add(rpcErrorMark + "999/x\x1e")
	f.Add(rpcErrorMark)
	f.Fuzz(func(t *testing.T, s string) {
		err := DecodeRPCError(rpc.ServerError(s))
		if err == nil {
			t.Fatal("a server error decoded to nil")
		}
		_ = CodeOf(err).HTTPStatus()
		_ = EncodeRPCError(err)
	})
}
