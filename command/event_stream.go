package command

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/droverhq/drover/structs"
)

// EventStreamCommand is `drover event stream [-topic T[:key]]... [-index N]`.
type EventStreamCommand struct{ Meta }

func (c *EventStreamCommand) Synopsis() string { return "Stream the cluster's events" }

func (c *EventStreamCommand) Help() string {
	return helpText(`
Usage: drover event stream [options]

  Streams events from /v1/event/stream and prints each event as one line
  of JSON (Topic, Type, Key, Namespace, FilterKeys, Index, Payload), until
  Ctrl-C. Topics: Job, Allocation, Evaluation, Node, Deployment, Quota,
  Queue, GPU, or * for all. The events are those of the -namespace
  (default "default"; "*" for every namespace the token may read); node,
  GPU, quota and queue events have no namespace and always pass.`, `
Event Stream Options:

  -topic=<topic>[:<key>]
    A topic to stream, with the key selecting one object (a job ID; for
    allocations and evaluations also their job's ID; for GPUs also their
    node's ID). Repeatable. Default: every topic.

  -index=<index>
    Start after this Raft index: the events of later indexes the server
    still holds, then new ones. Default 0: every event it still holds.`)
}

// topicFlags collects repeated -topic flags.
type topicFlags []string

func (t *topicFlags) String() string { return strings.Join(*t, ",") }
func (t *topicFlags) Set(v string) error {
	*t = append(*t, v)
	return nil
}

func (c *EventStreamCommand) Run(args []string) int {
	var topics topicFlags
	var index uint64
	fs := c.flagSet("event stream")
	fs.Var(&topics, "topic", "")
	fs.Uint64Var(&index, "index", 0, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return 1
	}
	if len(args) != 0 {
		return c.usageError("event stream", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return 1
	}
	ctx, stop := c.context()
	defer stop()
	if c.ShutdownCh != nil { // tests end the stream through it
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-c.ShutdownCh:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	enc := json.NewEncoder(c.stdout())
	err := client.Events().Stream(ctx, topics, index, func(f *structs.EventFrame) error {
		for i := range f.Events {
			if err := enc.Encode(&f.Events[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error streaming events: %s", err))
		return 1
	}
	return 0
}
