package structs

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCheckHeaderRefused: an http check's header names must be tokens,
// values free of control characters, and the block bounded; they are
// refused at submit rather than failing every check run on the client.
func TestCheckHeaderRefused(t *testing.T) {
	many := map[string][]string{}
	for i := range maxCheckHeaders + 1 {
		many["X-"+strconv.Itoa(i)] = []string{"v"}
	}
	for name, tt := range map[string]struct {
		header map[string][]string
		want   string
	}{
		"crlf in value": {map[string][]string{"X-A": {"a\r\nHost: evil"}}, "control character"},
		"bad name":      {map[string][]string{"X A:": {"v"}}, "not an HTTP token"},
		"empty name":    {map[string][]string{"": {"v"}}, "not an HTTP token"},
		"too many":      {many, "at most 64"},
		"too big":       {map[string][]string{"X-Big": {strings.Repeat("a", maxCheckHeaderBytes)}}, "bytes: at most"},
	} {
		c := &ServiceCheck{Name: "c", Type: ServiceCheckHTTP, Path: "/", Interval: time.Second, Timeout: time.Second, Header: tt.header}
		err := c.Validate(&Service{Name: "s", PortLabel: "8080"}, nil, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", name, err, tt.want)
		}
	}
	// The method too: not a token, it failed every run.
	bad := &ServiceCheck{Name: "c", Type: ServiceCheckHTTP, Path: "/", Interval: time.Second, Timeout: time.Second, Method: "GET /x HTTP/1.1\r\n"}
	if err := bad.Validate(&Service{Name: "s", PortLabel: "8080"}, nil, nil); err == nil || !strings.Contains(err.Error(), "is not an HTTP method") {
		t.Errorf("bad method: %v", err)
	}
	ok := &ServiceCheck{Name: "c", Type: ServiceCheckHTTP, Method: "PATCH", Path: "/", Interval: time.Second, Timeout: time.Second,
		Header: map[string][]string{"Authorization": {"Bearer x\ty"}, "X-Forwarded-For": {"a", "b"}}}
	if err := ok.Validate(&Service{Name: "s", PortLabel: "8080"}, nil, nil); err != nil {
		t.Errorf("valid headers: %v", err)
	}
}

// TestServiceBoundsAndDuplicates: tags and addresses longer than the
// servers take from clients are refused at submit (else registration
// would be retried forever), and so are two services of one owner with
// the same name and port (one registration would replace the other).
func TestServiceBoundsAndDuplicates(t *testing.T) {
	group := func(mut func(tg *TaskGroup)) error {
		j := &Job{ID: "j", Type: JobTypeService, Datacenters: []string{"dc1"}, TaskGroups: []*TaskGroup{{Name: "g", Count: 1,
			Tasks: []*Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"}}}}}}
		mut(j.TaskGroups[0])
		j.Canonicalize()
		return j.Validate()
	}
	long := strings.Repeat("a", MaxRegistrationField+1)
	for name, tt := range map[string]struct {
		mut  func(tg *TaskGroup)
		want string
	}{
		"long tag":     {func(tg *TaskGroup) { tg.Services = []*Service{{Name: "s", Tags: []string{long}}} }, "tag of 257 bytes"},
		"long address": {func(tg *TaskGroup) { tg.Services = []*Service{{Name: "s", Address: long}} }, "address of 257 bytes"},
		"group duplicate": {func(tg *TaskGroup) {
			tg.Services = []*Service{{Name: "s", PortLabel: "80"}, {Name: "s", PortLabel: "80"}}
		}, `service "s" (port "80") of the group is duplicate`},
		"task duplicate": {func(tg *TaskGroup) {
			tg.Tasks[0].Services = []*Service{{Name: "s"}, {Name: "s"}}
		}, `of task "t" is duplicate`},
	} {
		if err := group(tt.mut); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", name, err, tt.want)
		}
	}
	// The same name and port in the group and in a task are two
	// registrations (their IDs name their owner): allowed.
	if err := group(func(tg *TaskGroup) {
		tg.Services = []*Service{{Name: "s", PortLabel: "80"}}
		tg.Tasks[0].Services = []*Service{{Name: "s", PortLabel: "80"}, {Name: "s", PortLabel: "81"}}
	}); err != nil {
		t.Errorf("distinct owners or ports: %v", err)
	}
}

// TestCheckTimeoutAtLeastOneSecond: as Nomad, a check's timeout is at
// least 1s; a 1ns timeout failed every run (and, with check_restart,
// restarted the task over and over).
func TestCheckTimeoutAtLeastOneSecond(t *testing.T) {
	for _, timeout := range []time.Duration{time.Nanosecond, 999 * time.Millisecond, 0, -time.Second} {
		c := &ServiceCheck{Name: "c", Type: ServiceCheckTCP, Interval: time.Second, Timeout: timeout}
		if err := c.Validate(&Service{Name: "s", PortLabel: "80"}, nil, nil); err == nil || !strings.Contains(err.Error(), "must be between 1s and") {
			t.Errorf("timeout %v: %v, want refused", timeout, err)
		}
	}
	c := &ServiceCheck{Name: "c", Type: ServiceCheckTCP, Interval: time.Second, Timeout: 5 * time.Second}
	if err := c.Validate(&Service{Name: "s", PortLabel: "80"}, nil, nil); err != nil {
		t.Errorf("timeout above the interval (Nomad allows it): %v", err)
	}
}
