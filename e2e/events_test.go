package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// TestE2E_EventStreamFromClientAgent: a client-only agent serves
// /v1/event/stream through its server, in Nomad's shape.
func TestE2E_EventStreamFromClientAgent(t *testing.T) {
	dir := reachableDir(t)
	ports := [][]int{freePorts(t, 3), freePorts(t, 3)}
	srv := launchAgent(t, ports[0][0], "-config", soloServerConfig(t, dir, ports[0], 0))
	waitFor(t, 30*time.Second, "the server to lead", func() bool { return leaderOf(srv) != "" })
	servers := []string{fmt.Sprintf("127.0.0.1:%d", ports[0][1])}
	client := launchAgent(t, ports[1][0], "-config", clusterClientConfig(t, dir, "client-a", ports[1], servers, 1))
	waitFor(t, 30*time.Second, "the client's node ready", func() bool { return nodesReady(srv, 1) })

	c, err := nomad.NewClient(&nomad.Config{Address: client.addr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := c.EventStream().Stream(ctx, map[nomad.Topic][]string{nomad.TopicNode: nil}, 0, nil)
	if err != nil {
		t.Fatalf("event stream from the client agent: %v", err)
	}
	for frame := range ch {
		if frame.Err != nil {
			t.Fatalf("event stream: %v", frame.Err)
		}
		for _, e := range frame.Events {
			if e.Type != "NodeRegistration" {
				continue
			}
			if n, err := e.Node(); err != nil || n.Name != "client-a" {
				t.Fatalf("NodeRegistration payload: %+v, %v; want node client-a", n, err)
			}
			return
		}
	}
	t.Fatal("the stream ended without the client's NodeRegistration")
}
