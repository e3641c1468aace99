package server

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"
)

func TestPlanMembership(t *testing.T) {
	const timeout = time.Minute
	now := time.Unix(1_000_000, 0)
	voter := func(id string) raft.Server {
		return raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(id + ":4647")}
	}
	member := func(id string, st serf.MemberStatus) serverMember {
		return serverMember{Name: id + ".global", ID: id, RPCAddr: id + ":4647", Region: "global", Status: st}
	}
	conf := func(ids ...string) raft.Configuration {
		var c raft.Configuration
		for _, id := range ids {
			c.Servers = append(c.Servers, voter(id))
		}
		return c
	}
	add := func(id, reason string) memberAction {
		return memberAction{add: true, id: raft.ServerID(id), addr: raft.ServerAddress(id + ":4647"), reason: reason}
	}
	remove := func(id, reason string) memberAction {
		return memberAction{id: raft.ServerID(id), addr: raft.ServerAddress(id + ":4647"), reason: reason}
	}
	alive, failed, left := serf.StatusAlive, serf.StatusFailed, serf.StatusLeft

	tests := []struct {
		name     string
		cfg      raft.Configuration
		members  []serverMember
		down     deadClock
		want     []memberAction
		wantDown deadClock
	}{
		{
			name:    "in step",
			cfg:     conf("a", "b", "c"),
			members: []serverMember{member("a", alive), member("b", alive), member("c", alive)},
		},
		{
			name:    "alive server joins",
			cfg:     conf("a", "b"),
			members: []serverMember{member("a", alive), member("b", alive), member("c", alive)},
			want:    []memberAction{add("c", "joined")},
		},
		{
			name:    "failed server is not added",
			cfg:     conf("a", "b"),
			members: []serverMember{member("a", alive), member("b", alive), member("c", failed)},
		},
		{
			name:    "left server is removed at once",
			cfg:     conf("a", "b", "c"),
			members: []serverMember{member("a", alive), member("b", alive), member("c", left)},
			want:    []memberAction{remove("c", "left the cluster")},
		},
		{
			name:     "failed server starts its clock",
			cfg:      conf("a", "b", "c"),
			members:  []serverMember{member("a", alive), member("b", alive), member("c", failed)},
			wantDown: deadClock{"c": now},
		},
		{
			name:     "failed server within the timeout stays",
			cfg:      conf("a", "b", "c"),
			members:  []serverMember{member("a", alive), member("b", alive), member("c", failed)},
			down:     deadClock{"c": now.Add(-timeout + time.Second)},
			wantDown: deadClock{"c": now.Add(-timeout + time.Second)},
		},
		{
			name:    "failed server past the timeout is removed",
			cfg:     conf("a", "b", "c"),
			members: []serverMember{member("a", alive), member("b", alive), member("c", failed)},
			down:    deadClock{"c": now.Add(-timeout)},
			want:    []memberAction{remove("c", "down for 1m0s (dead server timeout 1m0s)")},
		},
		{
			name:     "server unknown to serf counts as down",
			cfg:      conf("a", "b", "c"),
			members:  []serverMember{member("a", alive), member("b", alive)},
			down:     deadClock{"c": now.Add(-timeout)},
			want:     []memberAction{remove("c", "down for 1m0s (dead server timeout 1m0s)")},
			wantDown: nil,
		},
		{
			name:     "half the voters down: nothing is removed",
			cfg:      conf("a", "b", "c", "d"),
			members:  []serverMember{member("a", alive), member("b", alive), member("c", failed), member("d", failed)},
			down:     deadClock{"c": now.Add(-timeout), "d": now.Add(-timeout)},
			wantDown: deadClock{"c": now.Add(-timeout), "d": now.Add(-timeout)},
		},
		{
			name:    "recovered server clears its clock",
			cfg:     conf("a", "b", "c"),
			members: []serverMember{member("a", alive), member("b", alive), member("c", alive)},
			down:    deadClock{"c": now.Add(-time.Second)},
		},
		{
			name:    "self is never removed",
			cfg:     conf("a", "b", "c"),
			members: []serverMember{member("a", left), member("b", alive), member("c", alive)},
		},
		{
			name: "new ID at a known address replaces the stale one",
			cfg:  conf("a", "b", "c"),
			members: []serverMember{member("a", alive), member("b", alive),
				{Name: "c.global", ID: "c2", RPCAddr: "c:4647", Status: alive}},
			want: []memberAction{remove("c", "its address now belongs to c.global"),
				{add: true, id: "c2", addr: "c:4647", reason: "joined"}},
		},
		{
			name: "address change re-adds the voter",
			cfg:  conf("a", "b", "c"),
			members: []serverMember{member("a", alive), member("b", alive),
				{Name: "c.global", ID: "c", RPCAddr: "c-new:4647", Status: alive}},
			want: []memberAction{{add: true, id: "c", addr: "c-new:4647", reason: "address changed"}},
		},
		{
			name: "an alive duplicate of an ID wins over a failed one",
			cfg:  conf("a", "b", "c"),
			members: []serverMember{member("a", alive), member("b", alive), member("c", alive),
				{Name: "c-old.global", ID: "c", RPCAddr: "c:4647", Status: failed}},
		},
		{
			name:    "clock of a server no longer in raft is forgotten",
			cfg:     conf("a", "b", "c"),
			members: []serverMember{member("a", alive), member("b", alive), member("c", alive)},
			down:    deadClock{"gone": now.Add(-time.Hour)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			down := deadClock{}
			for k, v := range tt.down {
				down[k] = v
			}
			got := planMembership(tt.cfg, tt.members, "a", down, now, timeout)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("actions = %s, want %s", fmtActions(got), fmtActions(tt.want))
			}
			wantDown := tt.wantDown
			if wantDown == nil {
				wantDown = deadClock{}
			}
			if !reflect.DeepEqual(down, wantDown) {
				t.Errorf("down = %v, want %v", down, wantDown)
			}
		})
	}
}

func fmtActions(as []memberAction) string {
	s := "["
	for _, a := range as {
		s += fmt.Sprintf("{add=%v %s %s %q}", a.add, a.id, a.addr, a.reason)
	}
	return s + "]"
}
