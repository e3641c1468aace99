package dockercluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/server/snapshot"
)

// stateIDs lists a server's jobs, allocations (with job and node) and
// nodes, sorted.
func stateIDs(ctx context.Context, a *api.Client) ([]string, error) {
	var out []string
	jobs, _, err := a.Jobs().List(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	for _, j := range jobs {
		out = append(out, "job "+j.ID)
	}
	allocs, _, err := a.Allocations().List(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list allocations: %w", err)
	}
	for _, al := range allocs {
		out = append(out, fmt.Sprintf("alloc %s job=%s node=%s", al.ID, al.JobID, al.NodeID))
	}
	nodes, _, err := a.Nodes().List(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	for _, n := range nodes {
		out = append(out, "node "+n.ID+" "+n.Name)
	}
	slices.Sort(out)
	return out, nil
}

// saveStable saves a snapshot from the cluster while its jobs,
// allocations and nodes stay the same, and returns both.
func saveStable(t *testing.T, c *cluster) ([]byte, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for try := 0; ; try++ {
		srv := c.anyServer()
		if srv == nil {
			t.Fatal("snapshot: no server reachable")
		}
		before, err := stateIDs(ctx, srv.api)
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		body, _, err := srv.api.Operator().SnapshotSave(ctx, nil)
		if err != nil {
			t.Fatalf("snapshot save: %v", err)
		}
		archive, err := io.ReadAll(body)
		body.Close()
		if err != nil {
			t.Fatalf("snapshot save: %v", err)
		}
		after, err := stateIDs(ctx, srv.api)
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		if slices.Equal(before, after) {
			return archive, after
		}
		if try == 5 {
			t.Fatalf("snapshot: the cluster's state kept changing while it was saved")
		}
	}
}

// restoreIntoFresh saves a snapshot of c, restores it into a new
// single-server cluster on the same network and checks that it has the
// same jobs, allocations and nodes.
func restoreIntoFresh(t *testing.T, c *cluster, ev *events) {
	t.Helper()
	archive, want := saveStable(t, c)
	v, err := snapshot.Read(bytes.NewReader(archive), io.Discard)
	if err != nil {
		t.Fatalf("saved snapshot: %v", err)
	}
	fresh := c.add("r1", true, 31)
	c.others = append(c.others, fresh)
	c.create(fresh, c.serverConfig(fresh, spec{servers: 1, heartbeatTTL: "5s"}))
	c.start(fresh)
	waitUntil(t, 30*time.Second, "a leader in the fresh cluster", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		l, err := fresh.api.Status().Leader(ctx)
		return err == nil && l != ""
	})
	// The same management secret: the restored state holds the
	// cluster's token with it, which the checks below then use.
	c.bootstrapACL([]*member{fresh})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := fresh.api.Operator().SnapshotRestore(ctx, bytes.NewReader(archive), nil); err != nil {
		t.Fatalf("snapshot restore into the fresh cluster: %v", err)
	}
	got, err := stateIDs(ctx, fresh.api)
	if err != nil {
		t.Fatalf("fresh cluster: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("fresh cluster after restore differs from the saved one:\n%s", diffLines(got, want))
	}
	ev.add("snapshot (index %d, %d bytes of state) restored into a fresh server: %d jobs, allocations and nodes match", v.Meta.Index, v.Meta.Size, len(want))
}

// diffLines lists what only one side has.
func diffLines(got, want []string) string {
	var b strings.Builder
	for _, w := range want {
		if !slices.Contains(got, w) {
			fmt.Fprintf(&b, "  missing %s\n", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			fmt.Fprintf(&b, "  extra   %s\n", g)
		}
	}
	return b.String()
}
