package structs

import (
	"errors"
	"net/http"
	"net/rpc"
	"strconv"
	"strings"
)

// ErrCode classifies an error for whoever receives it: it travels over
// RPC with the error's text (EncodeRPCError, DecodeRPCError) and maps to
// an HTTP status in one place (HTTPStatus). Nothing classifies errors by
// their text.
type ErrCode uint8

// Error codes. Never renumber: they cross the wire between servers and
// clients of different builds.
const (
	CodeInternal         ErrCode = 0 // a bug or an unexpected failure: 500
	CodeNotFound         ErrCode = 1 // 404
	CodeBadRequest       ErrCode = 2 // 400
	CodeConflict         ErrCode = 3 // 409: check-and-set lost, wrong state
	CodePermissionDenied ErrCode = 4 // 403
	CodeNotLeader        ErrCode = 5 // no leader, or not the leader: not applied; 503
	CodeOutcomeUnknown   ErrCode = 6 // may or may not have been applied; 503
	CodeUnavailable      ErrCode = 7 // shutting down, unreachable, timed out; 503
	CodeTooLarge         ErrCode = 8 // a request over a limit; 413
)

var codeNames = [...]string{"internal", "not found", "bad request", "conflict", "permission denied", "not leader", "outcome unknown", "unavailable", "too large"}

func (c ErrCode) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "code " + strconv.Itoa(int(c))
}

// HTTPStatus is the HTTP status of an error with code c.
func (c ErrCode) HTTPStatus() int {
	switch c {
	case CodeNotFound:
		return http.StatusNotFound
	case CodeBadRequest:
		return http.StatusBadRequest
	case CodeConflict:
		return http.StatusConflict
	case CodePermissionDenied:
		return http.StatusForbidden
	case CodeNotLeader, CodeOutcomeUnknown, CodeUnavailable:
		return http.StatusServiceUnavailable
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusInternalServerError
}

// Error is a sentinel error with a code. Wrap one (fmt.Errorf("...: %w",
// ErrNotFound)) to give an error its code; test with errors.Is.
type Error struct {
	Code ErrCode
	// key names the sentinel on the wire, so that errors.Is matches it on
	// the other side too.
	key string
	msg string
}

func (e *Error) Error() string { return e.msg }

// newSentinel registers a sentinel so that DecodeRPCError restores it.
func newSentinel(key string, code ErrCode, msg string) *Error {
	e := &Error{Code: code, key: key, msg: msg}
	sentinels[key] = e
	return e
}

var sentinels = map[string]*Error{}

// NewCodedError returns a package's own sentinel error with a code. Over
// RPC it keeps its code and text; errors.Is matches it only in process.
func NewCodedError(code ErrCode, msg string) *Error {
	return &Error{Code: code, msg: msg}
}

// Sentinel errors shared by servers, clients and the HTTP layer. Each
// keeps its identity over RPC: errors.Is(err, ErrNotFound) holds for an
// error a remote endpoint wrapped it in.
var (
	ErrNotFound    = newSentinel("not-found", CodeNotFound, "not found")
	ErrNoLeader    = newSentinel("no-leader", CodeNotLeader, "no cluster leader")
	ErrNotLeader   = newSentinel("not-leader", CodeNotLeader, "not the leader")
	ErrInvalid     = newSentinel("invalid", CodeBadRequest, "invalid request")
	ErrUnknownNode = newSentinel("unknown-node", CodeNotFound, "unknown node")
	// ErrConflict: the request lost a check-and-set, or the object is
	// not in a state that allows it.
	ErrConflict         = newSentinel("conflict", CodeConflict, "conflict")
	ErrPermissionDenied = newSentinel("permission-denied", CodePermissionDenied, "Permission denied")
	ErrShuttingDown     = newSentinel("shutting-down", CodeUnavailable, "shutting down")
	// ErrUnavailable: what the request needs cannot be reached now (a
	// node not connected to any server, a timed-out peer).
	ErrUnavailable = newSentinel("unavailable", CodeUnavailable, "unavailable")
	ErrTooLarge    = newSentinel("too-large", CodeTooLarge, "too large")
	// ErrOutcomeUnknown: a write reached the leader but no answer came
	// back (the leader lost its leadership or its connection while
	// committing), so it may or may not take effect.
	ErrOutcomeUnknown = newSentinel("outcome-unknown", CodeOutcomeUnknown, "outcome unknown: the request may or may not have been applied")
)

// CodeOf returns the code of the first coded error in err's chain (a
// sentinel, or an error decoded from RPC); CodeInternal when there is
// none.
func CodeOf(err error) ErrCode {
	var coded interface{ errCode() ErrCode }
	if errors.As(err, &coded) {
		return coded.errCode()
	}
	return CodeInternal
}

func (e *Error) errCode() ErrCode { return e.Code }

// keyedSentinel returns the first sentinel with a wire key in err's
// chain (depth first, as errors.Is walks it), or nil; a package's own
// coded error (NewCodedError) does not hide a shared sentinel beneath.
func keyedSentinel(err error) *Error {
	switch e := err.(type) {
	case nil:
		return nil
	case *Error:
		if e.key != "" {
			return e
		}
	case *RemoteError:
		if e.Sentinel != nil {
			return e.Sentinel
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return keyedSentinel(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if s := keyedSentinel(e); s != nil {
				return s
			}
		}
	}
	return nil
}

// RemoteError is an error an endpoint returned on another machine, as
// DecodeRPCError restores it: its text, its code, and the sentinel it
// wrapped (errors.Is matches it).
type RemoteError struct {
	Code     ErrCode
	Msg      string
	Sentinel *Error // nil when the remote error wrapped none
}

func (e *RemoteError) Error() string    { return e.Msg }
func (e *RemoteError) errCode() ErrCode { return e.Code }

// Unwrap returns the sentinel, so errors.Is(err, ErrNotFound) holds.
func (e *RemoteError) Unwrap() error {
	if e.Sentinel == nil {
		return nil
	}
	return e.Sentinel
}

// rpcErrorMark starts an encoded error; a text without it (from a peer
// that does not code its errors, or net/rpc's own) decodes as internal.
const rpcErrorMark = "\x1edrover-err\x1e"

// EncodeRPCError is err's text with its code and sentinel, as an RPC
// response carries it.
func EncodeRPCError(err error) string {
	key := ""
	if s := keyedSentinel(err); s != nil {
		key = s.key
	}
	var b strings.Builder
	b.WriteString(rpcErrorMark)
	b.WriteString(strconv.Itoa(int(CodeOf(err))))
	b.WriteByte('/')
	b.WriteString(key)
	b.WriteByte('\x1e')
	b.WriteString(err.Error())
	return b.String()
}

// DecodeRPCError restores an error EncodeRPCError wrote. It returns err
// unchanged unless it is an rpc.ServerError (the remote endpoint's
// answer, not a transport failure).
func DecodeRPCError(err error) error {
	var se rpc.ServerError
	if err == nil || !errors.As(err, &se) {
		return err
	}
	return decodeRPCErrorText(string(se))
}

func decodeRPCErrorText(text string) *RemoteError {
	rest, ok := strings.CutPrefix(text, rpcErrorMark)
	if !ok {
		return &RemoteError{Code: CodeInternal, Msg: text}
	}
	head, msg, ok := strings.Cut(rest, "\x1e")
	if !ok {
		return &RemoteError{Code: CodeInternal, Msg: rest}
	}
	codeText, key, _ := strings.Cut(head, "/")
	code, err := strconv.Atoi(codeText)
	if err != nil || code < 0 || code > 255 {
		return &RemoteError{Code: CodeInternal, Msg: msg}
	}
	re := &RemoteError{Code: ErrCode(code), Msg: msg, Sentinel: sentinels[key]}
	if re.Sentinel != nil {
		re.Code = re.Sentinel.Code // a known sentinel's code is its own
	}
	return re
}

// DecodeRPCErrorText is DecodeRPCError for a text read off a stream
// (StreamResponse.Error): "" is no error.
func DecodeRPCErrorText(text string) error {
	if text == "" {
		return nil
	}
	return decodeRPCErrorText(text)
}

// IsRemote reports whether err came from another machine's endpoint.
func IsRemote(err error) bool {
	var re *RemoteError
	return errors.As(err, &re)
}
