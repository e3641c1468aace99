package command

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/cli"

	"github.com/droverhq/drover/structs"
)

// TestEventStreamCommand: `drover event stream -topic Node` prints each
// node event as one JSON line, until stopped.
func TestEventStreamCommand(t *testing.T) {
	addr := startDevAgent(t)
	t.Setenv("DROVER_ADDR", addr)
	var out lockedBuffer
	stop := make(chan struct{})
	done := make(chan int)
	ui := cli.NewMockUi()
	go func() {
		done <- Run([]string{"event", "stream", "-topic", "Node"}, Meta{Ui: ui, Stdout: &out, ShutdownCh: stop})
	}()
	eventually(t, 15*time.Second, "a NodeRegistration line", func() bool {
		return strings.Contains(out.String(), `"Type":"NodeRegistration"`)
	})
	close(stop)
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, ui.ErrorWriter.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var e structs.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Topic != structs.TopicNode || e.Index == 0 {
			t.Errorf("line %.80q: %+v, %v; want one Node event with its index", line, e, err)
		}
	}

	code, _, stderr := run(t, addr, "event", "stream", "-topic", "Jobz")
	if code != 1 || !strings.Contains(stderr, `topic "Jobz"`) {
		t.Errorf("unknown topic: exit %d, stderr %q; want 1 naming the topic", code, stderr)
	}
}
