package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// Log streams and origins for AllocFS.Logs.
const (
	LogStdout   = "stdout"
	LogStderr   = "stderr"
	OriginStart = "start"
	OriginEnd   = "end"
)

// AllocFS is the client file-system endpoints (/v1/client/fs).
type AllocFS struct{ c *Client }

// AllocFS returns the allocation file-system endpoints.
func (c *Client) AllocFS() *AllocFS { return &AllocFS{c: c} }

// Logs streams a task's stdout or stderr as raw bytes, starting offset
// bytes from origin ("start" or "end"; "" means start). With follow the
// stream stays open until the task is dead and its log fully read, or ctx
// ends. The caller closes the reader.
func (f *AllocFS) Logs(ctx context.Context, allocID, task, stream string, follow bool, origin string, offset int64) (io.ReadCloser, error) {
	switch stream {
	case LogStdout, LogStderr:
	default:
		return nil, fmt.Errorf("log stream %q: want %q or %q", stream, LogStdout, LogStderr)
	}
	switch origin {
	case "":
		origin = OriginStart
	case OriginStart, OriginEnd:
	default:
		return nil, fmt.Errorf("log origin %q: want %q or %q", origin, OriginStart, OriginEnd)
	}
	if offset < 0 {
		return nil, fmt.Errorf("log offset %d: must not be negative", offset)
	}
	r := f.c.newRequest(http.MethodGet, "/v1/client/fs/logs/"+pathID(allocID))
	r.params.Set("task", task)
	r.params.Set("type", stream)
	r.params.Set("follow", strconv.FormatBool(follow))
	r.params.Set("plain", "true")
	r.params.Set("origin", origin)
	r.params.Set("offset", strconv.FormatInt(offset, 10))
	resp, _, err := f.c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
