package structs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestAttributeOf(t *testing.T) {
	tests := []struct {
		in, wantJSON, wantString string
	}{
		{"80 GiB", `{"Int":81920,"Unit":"MiB"}`, "80 GiB"},
		{"40960 MiB", `{"Int":40960,"Unit":"MiB"}`, "40 GiB"},
		{"700 W", `{"Int":700,"Unit":"W"}`, "700 W"},
		{"1.5 GHz", `{"Float":1.5,"Unit":"GHz"}`, "1.5 GHz"},
		{"true", `{"Bool":true}`, "true"},
		{"3", `{"Int":3}`, "3"},
		{"9.0", `{"String":"9.0"}`, "9.0"},
		{"550.54.15", `{"String":"550.54.15"}`, "550.54.15"},
		{"hopper", `{"String":"hopper"}`, "hopper"},
		{"12 parsecs", `{"String":"12 parsecs"}`, "12 parsecs"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			a := AttributeOf(tt.in)
			b, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.wantJSON {
				t.Errorf("JSON: got %s, want %s", b, tt.wantJSON)
			}
			if got := a.String(); got != tt.wantString {
				t.Errorf("String: got %q, want %q", got, tt.wantString)
			}
		})
	}
}

func TestNodeDeviceResourceJSON(t *testing.T) {
	d := &NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "H100",
		Attributes: map[string]string{DeviceAttrMemory: "80 GiB", DeviceAttrSimulated: "true"},
		Instances:  []*NodeDevice{{ID: "GPU-1", Healthy: true, Attributes: map[string]string{DeviceAttrNUMANode: "0"}}}}
	b, err := json.Marshal(&NodeResources{Devices: []*NodeDeviceResource{d}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"memory":{"Int":81920,"Unit":"MiB"}`) || !strings.Contains(string(b), `"numa_node":"0"`) {
		t.Fatalf("got %s, want typed group attributes and string instance ones", b)
	}
	var back NodeResources
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got := back.Devices[0]
	if got.Attributes[DeviceAttrMemory] != "80 GiB" || got.Attributes[DeviceAttrSimulated] != "true" || got.Name != "H100" || got.Instances[0].ID != "GPU-1" {
		t.Fatalf("round trip: got %+v", got)
	}
	// Strings, as Drover wrote them before, still decode.
	var old NodeDeviceResource
	if err := json.Unmarshal([]byte(`{"Name":"A100","Attributes":{"memory":"40 GiB"}}`), &old); err != nil || old.Attributes[DeviceAttrMemory] != "40 GiB" {
		t.Fatalf("old shape: got %+v, %v", old, err)
	}
	// msgpack (RPC, Raft) keeps strings.
	buf, err := Encode(0, d)
	if err != nil {
		t.Fatal(err)
	}
	var mp NodeDeviceResource
	if err := Decode(buf[1:], &mp); err != nil || mp.Attributes[DeviceAttrMemory] != "80 GiB" {
		t.Fatalf("msgpack: got %+v, %v", mp, err)
	}
}

func TestACLTokenExpirationTTLJSON(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{`{"Name": "a", "ExpirationTTL": "1h"}`, time.Hour, false},
		{`{"Name": "a", "ExpirationTTL": ""}`, 0, false},
		{`{"Name": "a", "ExpirationTTL": 60000000000}`, time.Minute, false},
		{`{"Name": "a"}`, 0, false},
		{`{"Name": "a", "ExpirationTTL": "soon"}`, 0, true},
		{`{"Name": "a", "ExpirationTTL": true}`, 0, true},
	}
	for _, tt := range tests {
		var tok ACLToken
		err := json.Unmarshal([]byte(tt.in), &tok)
		if (err != nil) != tt.err || tok.ExpirationTTL != tt.want || (!tt.err && tok.Name != "a") {
			t.Errorf("%s: got %v, %+v; want %v, error %v", tt.in, err, tok, tt.want, tt.err)
		}
	}
}
