package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/droverhq/drover/structs"
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

// List returns the entries of a directory of the allocation's directory
// (path "" or "/" is its top); allocID may be a unique prefix.
func (f *AllocFS) List(ctx context.Context, allocID, path string) ([]*structs.AllocFileInfo, error) {
	var out []*structs.AllocFileInfo
	q := &QueryOptions{Params: map[string]string{"path": path}}
	if _, err := f.c.query(ctx, "/v1/client/fs/ls/"+pathID(allocID), q, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Stat describes one file or directory of the allocation's directory.
func (f *AllocFS) Stat(ctx context.Context, allocID, path string) (*structs.AllocFileInfo, error) {
	var out structs.AllocFileInfo
	q := &QueryOptions{Params: map[string]string{"path": path}}
	if _, err := f.c.query(ctx, "/v1/client/fs/stat/"+pathID(allocID), q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Cat streams a file of the allocation's directory as raw bytes. An
// error found after the first bytes (the node going away) cuts the
// stream short. The caller closes the reader.
func (f *AllocFS) Cat(ctx context.Context, allocID, path string) (io.ReadCloser, error) {
	return f.read(ctx, "/v1/client/fs/cat/"+pathID(allocID), path, nil)
}

// ReadAt streams at most limit bytes of a file of the allocation's
// directory from offset; limit 0 reads to the end. The caller closes the
// reader.
func (f *AllocFS) ReadAt(ctx context.Context, allocID, path string, offset, limit int64) (io.ReadCloser, error) {
	if offset < 0 || limit < 0 {
		return nil, fmt.Errorf("read %s at %d limit %d: offset and limit must not be negative", path, offset, limit)
	}
	params := map[string]string{"offset": strconv.FormatInt(offset, 10), "limit": strconv.FormatInt(limit, 10)}
	return f.read(ctx, "/v1/client/fs/readat/"+pathID(allocID), path, params)
}

func (f *AllocFS) read(ctx context.Context, route, path string, params map[string]string) (io.ReadCloser, error) {
	r := f.c.newRequest(http.MethodGet, route)
	r.params.Set("path", path)
	for k, v := range params {
		r.params.Set(k, v)
	}
	resp, _, err := f.c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
