package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/droverhq/drover/structs"
)

// Events is the event stream endpoint (/v1/event/stream).
type Events struct{ c *Client }

// Events returns the event stream endpoint.
func (c *Client) Events() *Events { return &Events{c: c} }

// maxEventLine bounds one NDJSON line of the stream (a frame's events
// are at most a stream message, 4 MiB).
const maxEventLine = structs.MaxStreamMessage + 1<<20

// Stream subscribes to the events of topics ("Job", "Job:<id>",
// "Allocation:<job id>", "*" for all; none: all) after index (0: every
// event the server still holds) in the client's namespace ("*": every
// namespace the token may read), and calls fn with each frame, in index
// order; heartbeats are skipped. It returns when ctx ends (nil), when fn
// returns an error (that error), or when the stream ends (the server's
// error, or io.ErrUnexpectedEOF when it was cut).
func (e *Events) Stream(ctx context.Context, topics []string, index uint64, fn func(*structs.EventFrame) error) error {
	r := e.c.newRequest(http.MethodGet, "/v1/event/stream")
	r.params.Set("index", strconv.FormatUint(index, 10))
	for _, t := range topics {
		r.params.Add("topic", t)
	}
	resp, _, err := e.c.do(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxEventLine)
	for sc.Scan() {
		var line struct {
			structs.EventFrame
			Error string
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("event stream: decode frame: %w", err)
		}
		if line.Error != "" {
			return fmt.Errorf("event stream: %s", line.Error)
		}
		if line.Index == 0 && len(line.Events) == 0 {
			continue // a heartbeat
		}
		if err := fn(&line.EventFrame); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("event stream: %w", err)
	}
	return fmt.Errorf("event stream: %w", io.ErrUnexpectedEOF)
}
