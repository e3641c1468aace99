package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/droverhq/drover/server/snapshot"
)

// TestSnapshotHTTP walks GET and PUT /v1/operator/snapshot on real
// agents: the archive and its headers, refused bodies with 400 and a
// message, and a restore that brings the saved job along.
func TestSnapshotHTTP(t *testing.T) {
	_, src := newTestAgent(t)
	if code, body, _ := doJSON(t, "PUT", src+"/v1/jobs", blockingJob); code != 200 {
		t.Fatalf("register: %d %s", code, body)
	}
	resp, err := http.Get(src + "/v1/operator/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	archive, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET snapshot: %d, %v", resp.StatusCode, err)
	}
	sum := sha256.Sum256(archive)
	if got, want := resp.Header.Get("Digest"), "sha-256="+base64.StdEncoding.EncodeToString(sum[:]); got != want {
		t.Errorf("Digest: got %q, want %q", got, want)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("Content-Type: got %q", ct)
	}
	v, err := snapshot.Read(bytes.NewReader(archive), io.Discard)
	if err != nil {
		t.Fatalf("archive from GET: %v", err)
	}
	if idx := resp.Header.Get("X-Nomad-Index"); idx != strconv.FormatUint(v.Meta.Index, 10) {
		t.Errorf("X-Nomad-Index: got %q, want the snapshot's index %d", idx, v.Meta.Index)
	}

	_, dst := newTestAgent(t)
	tests := []struct {
		name, body, want string
	}{
		{"empty", "", "empty request body"},
		{"not an archive", `{"Job": {}}`, "not a gzip stream"},
		{"truncated", string(archive[:len(archive)/3]), "damaged or truncated"},
	}
	for _, tt := range tests {
		code, body, _ := doJSON(t, "PUT", dst+"/v1/operator/snapshot", tt.body)
		if code != http.StatusBadRequest || !strings.Contains(body, tt.want) {
			t.Errorf("PUT %s: got %d %q, want 400 saying %q", tt.name, code, body, tt.want)
		}
	}
	if code, _, _ := doJSON(t, "GET", dst+"/v1/job/sleepy", ""); code != 404 {
		t.Fatalf("dst has the job before the restore: %d", code)
	}
	code, body, index := doJSON(t, "PUT", dst+"/v1/operator/snapshot", string(archive))
	if code != 200 {
		t.Fatalf("PUT archive: %d %s", code, body)
	}
	var out struct {
		Meta  snapshot.Meta
		Index uint64
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || out.Meta.Index != v.Meta.Index || out.Index <= v.Meta.Index {
		t.Errorf("PUT answer %s (%v): want the snapshot's meta and an index above %d", body, err, v.Meta.Index)
	}
	if index != strconv.FormatUint(out.Index, 10) {
		t.Errorf("X-Nomad-Index %q, want %d", index, out.Index)
	}
	if code, body, _ := doJSON(t, "GET", dst+"/v1/job/sleepy", ""); code != 200 {
		t.Errorf("restored job: %d %s", code, body)
	}
}
