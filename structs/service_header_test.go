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
	ok := &ServiceCheck{Name: "c", Type: ServiceCheckHTTP, Path: "/", Interval: time.Second, Timeout: time.Second,
		Header: map[string][]string{"Authorization": {"Bearer x\ty"}, "X-Forwarded-For": {"a", "b"}}}
	if err := ok.Validate(&Service{Name: "s", PortLabel: "8080"}, nil, nil); err != nil {
		t.Errorf("valid headers: %v", err)
	}
}
