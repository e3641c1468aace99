package structs

import (
	"encoding/json"
	"testing"
)

// TestEventJSONSharedOnce: copies of a shared event encode once (the
// first call's bytes serve every copy), and the bytes are the event's.
func TestEventJSONSharedOnce(t *testing.T) {
	e := Event{Topic: TopicJob, Type: TypeJobRegistered, Key: "j", Index: 7, Payload: map[string]any{"Job": map[string]any{"ID": "j"}}}
	e.ShareJSON()
	c1, c2 := e, e
	b1, err := c1.JSON()
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := c2.JSON()
	if &b1[0] != &b2[0] {
		t.Error("second copy encoded again, want the first encoding shared")
	}
	var back Event
	if err := json.Unmarshal(b2, &back); err != nil || back.Key != "j" || back.Index != 7 || back.Topic != TopicJob {
		t.Errorf("decoded %+v (%v), want the event", back, err)
	}
	plain := Event{Key: "k"}
	if b, err := plain.JSON(); err != nil || !json.Valid(b) {
		t.Errorf("unshared event JSON: %s, %v", b, err)
	}
}
