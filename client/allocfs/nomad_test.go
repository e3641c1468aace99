package allocfs

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/droverhq/drover/drivers/logrotate"
	"github.com/droverhq/drover/structs"
)

// The wire types must encode to what Nomad's api package decodes.

func TestFrameJSONRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   structs.StreamFrame
		want nomad.StreamFrame
	}{
		{"data", structs.StreamFrame{Offset: 42, Data: []byte("line\n\x00\xff"), File: "alloc/logs/web.stdout.3"},
			nomad.StreamFrame{Offset: 42, Data: []byte("line\n\x00\xff"), File: "alloc/logs/web.stdout.3"}},
		{"event", structs.StreamFrame{File: "alloc/data/f", Offset: 7, FileEvent: structs.FileEventDeleted},
			nomad.StreamFrame{File: "alloc/data/f", Offset: 7, FileEvent: "file deleted"}},
		{"truncated", structs.StreamFrame{File: "alloc/data/f", FileEvent: structs.FileEventTruncated},
			nomad.StreamFrame{File: "alloc/data/f", FileEvent: "file truncated"}},
		{"heartbeat", structs.StreamFrame{}, nomad.StreamFrame{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(&tt.in)
			if err != nil {
				t.Fatal(err)
			}
			var got nomad.StreamFrame
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if got.Offset != tt.want.Offset || !bytes.Equal(got.Data, tt.want.Data) || got.File != tt.want.File || got.FileEvent != tt.want.FileEvent {
				t.Errorf("%s decodes to %+v, want %+v", b, got, tt.want)
			}
			if got.IsHeartbeat() != tt.in.IsHeartbeat() {
				t.Errorf("%s: Nomad's IsHeartbeat %v, ours %v", b, got.IsHeartbeat(), tt.in.IsHeartbeat())
			}
		})
	}
	if b, _ := json.Marshal(&structs.StreamFrame{}); string(b) != "{}" {
		t.Errorf("heartbeat encodes to %s, want {}", b)
	}
}

func TestFileInfoJSON(t *testing.T) {
	in := structs.AllocFileInfo{Name: "f", Size: 3, FileMode: "-rw-r--r--",
		ModTime: time.Date(2026, 3, 1, 12, 0, 0, 5, time.UTC), ContentType: "text/plain; charset=utf-8"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var got nomad.AllocFileInfo
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := nomad.AllocFileInfo(in)
	if got != want {
		t.Errorf("%s decodes to %+v, want %+v", b, got, want)
	}
}

// TestFrameReader writes a rotated log's frames as concatenated JSON (as
// the HTTP layer will) and reads them back with Nomad's FrameReader.
func TestFrameReader(t *testing.T) {
	fsys, dir := allocDir(t)
	w := openLog(t, dir, "web", logrotate.Options{MaxFiles: 10, MaxFileBytes: 100 << 10})
	want := bytes.Repeat([]byte("0123456789abcdef\x00\xfe\n"), 20_000) // 380 kB over 4 files
	writeLog(t, w, string(want))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	emit := func(fr *structs.StreamFrame) error { return enc.Encode(fr) }
	if err := fsys.Logs(t.Context(), LogsOptions{Task: "web"}, nil, emit); err != nil {
		t.Fatal(err)
	}
	frames, errCh := make(chan *nomad.StreamFrame, 100), make(chan error, 1)
	dec := json.NewDecoder(&buf)
	for {
		var fr nomad.StreamFrame
		if err := dec.Decode(&fr); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		frames <- &fr
	}
	close(frames)
	r := nomad.NewFrameReader(frames, errCh, make(chan struct{}))
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("FrameReader read %d bytes, want %d (equal: false)", len(got), len(want))
	}
	if r.Offset() != len(want)%(100<<10) {
		t.Errorf("FrameReader offset %d, want %d: the offset in the last file", r.Offset(), len(want)%(100<<10))
	}
}

// TestNomadClient serves the package through a minimal HTTP adapter and
// reads it with Nomad's own client: List, Stat, ReadAt and a followed
// Logs, including heartbeats, which the client must skip.
func TestNomadClient(t *testing.T) {
	fsys, dir := allocDir(t)
	fsys.HeartbeatInterval = time.Millisecond
	w := openLog(t, dir, "web", logrotate.Options{MaxFiles: 3, MaxFileBytes: 10})
	writeLog(t, w, alphabet[:15])
	var dead deadFlag
	srv := httptest.NewServer(nomadAdapter(t, fsys, dead.get))
	defer srv.Close()
	client, err := nomad.NewClient(&nomad.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	alloc := &nomad.Allocation{ID: testAllocID}

	files, _, err := client.AllocFS().List(alloc, "/alloc/logs", nil)
	if err != nil || len(files) != 2 || files[1].Name != "web.stdout.1" || files[1].Size != 5 {
		t.Fatalf("List: %+v, %v; want web.stdout.0 and .1 (5 bytes)", files, err)
	}
	st, _, err := client.AllocFS().Stat(alloc, "web/local/hello.txt", nil)
	if err != nil || st.Size != 13 || st.ContentType != "text/plain; charset=utf-8" || st.ModTime.IsZero() {
		t.Fatalf("Stat: %+v, %v", st, err)
	}
	rc, err := client.AllocFS().ReadAt(alloc, "web/local/hello.txt", 7, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "world" {
		t.Errorf("ReadAt: %q, want %q", got, "world")
	}

	cancel := make(chan struct{})
	frames, errCh := client.AllocFS().Logs(alloc, true, "web", "stdout", "start", 0, cancel, nil)
	r := nomad.NewFrameReader(frames, errCh, cancel)
	defer r.Close()
	readN := func(n int) string {
		t.Helper()
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			t.Fatalf("read: %v", err)
		}
		return string(b)
	}
	if got := readN(15); got != alphabet[:15] {
		t.Errorf("got %q, want %q", got, alphabet[:15])
	}
	writeLog(t, w, alphabet[15:]) // rotates twice
	dead.set()
	if got := readN(len(alphabet) - 15); got != alphabet[15:] {
		t.Errorf("got %q, want %q", got, alphabet[15:])
	}
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Errorf("after the task died: %q, %v; want EOF", rest, err)
	}
}

// nomadAdapter is a test-only HTTP face for FS with Nomad's routes.
func nomadAdapter(t *testing.T, fsys *FS, dead func() bool) http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any, err error) {
		if err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, structs.ErrNotFound) {
				code = http.StatusNotFound
			}
			http.Error(w, err.Error(), code)
			return
		}
		w.Header().Set("X-Nomad-Index", "1")
		w.Header().Set("X-Nomad-KnownLeader", "true")
		w.Header().Set("X-Nomad-LastContact", "0")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /v1/client/fs/ls/{alloc}", func(w http.ResponseWriter, r *http.Request) {
		v, err := fsys.List(r.URL.Query().Get("path"))
		reply(w, v, err)
	})
	mux.HandleFunc("GET /v1/client/fs/stat/{alloc}", func(w http.ResponseWriter, r *http.Request) {
		v, err := fsys.Stat(r.URL.Query().Get("path"))
		reply(w, v, err)
	})
	mux.HandleFunc("GET /v1/client/fs/readat/{alloc}", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		offset, _ := strconv.ParseInt(q.Get("offset"), 10, 64)
		limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64)
		rc, err := fsys.ReadAt(q.Get("path"), offset, limit)
		if err != nil {
			reply(w, nil, err)
			return
		}
		defer rc.Close()
		_, _ = io.Copy(w, rc)
	})
	mux.HandleFunc("GET /v1/client/fs/logs/{alloc}", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		offset, _ := strconv.ParseInt(q.Get("offset"), 10, 64)
		opts := LogsOptions{Task: q.Get("task"), Stderr: q.Get("type") == "stderr", Origin: q.Get("origin"),
			Offset: offset, Follow: q.Get("follow") == "true"}
		enc := json.NewEncoder(w)
		err := fsys.Logs(r.Context(), opts, dead, func(fr *structs.StreamFrame) error {
			if err := enc.Encode(fr); err != nil {
				return err
			}
			w.(http.Flusher).Flush()
			return nil
		})
		if err != nil && r.Context().Err() == nil {
			t.Errorf("Logs: %v", err)
		}
	})
	mux.HandleFunc("/", http.NotFound) // node lookups: the client falls back to this agent
	return mux
}

// The wire types convert to Nomad's: same fields, same types, same order.
var (
	_ = nomad.StreamFrame(structs.StreamFrame{})
	_ = nomad.AllocFileInfo(structs.AllocFileInfo{})
)
