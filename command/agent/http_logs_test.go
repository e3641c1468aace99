package agent

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/drivers/logrotate"
)

// logsBackend serves one task's log whose files have the given base.
type logsBackend struct {
	serverOnly
	base string
}

func (b logsBackend) LogPath(string, string, bool) (string, error) {
	return logrotate.Current(b.base), nil
}

func newLogsServer(t *testing.T) (base, url string) {
	t.Helper()
	base = filepath.Join(t.TempDir(), "t.stdout")
	srv := httptest.NewServer(newHTTPAPI(logsBackend{base: base}, hclog.NewNullLogger()))
	t.Cleanup(srv.Close)
	return base, srv.URL + "/v1/client/fs/logs/a1?task=t"
}

func TestLogsReadAcrossRotatedFiles(t *testing.T) {
	base, url := newLogsServer(t)
	// .0 to .2 were pruned; the files left hold "abc", "defg", "hi".
	for name, data := range map[string]string{".3": "abc", ".4": "defg", ".5": "hi"} {
		if err := os.WriteFile(base+name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		query string
		want  string
	}{
		{"", "abcdefghi"},
		{"&origin=start&offset=3", "defghi"},
		{"&origin=start&offset=4", "efghi"},
		{"&origin=start&offset=9", ""},
		{"&origin=start&offset=50", ""},
		{"&origin=end&offset=3", "ghi"},
		{"&origin=end&offset=2", "hi"},
		{"&origin=end&offset=100", "abcdefghi"},
		{"&origin=end", ""},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			resp, err := http.Get(url + tt.query)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || string(body) != tt.want {
				t.Errorf("got %d %q, want 200 %q", resp.StatusCode, body, tt.want)
			}
			if got := resp.Header.Get("X-Drover-Log-Size"); got != "9" {
				t.Errorf("X-Drover-Log-Size = %q, want 9 (all files)", got)
			}
		})
	}
}

func TestLogsMissing(t *testing.T) {
	_, url := newLogsServer(t)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want 404 for a log with no files", resp.StatusCode)
	}
}

// A follower moves to the next file when the writer rotates, from the
// first byte of the first file to the last of the newest.
func TestLogsFollowAcrossRotation(t *testing.T) {
	base, url := newLogsServer(t)
	w, err := logrotate.Open(base, logrotate.Options{MaxFiles: 2, MaxFileBytes: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Write([]byte("abc\n"))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"&follow=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	var got []string
	readLine := func() {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("follow ended after %q: %v", got, lines.Err())
		}
		got = append(got, lines.Text())
	}
	readLine()
	// Each write fills the next file; the last two prune the oldest.
	for _, line := range []string{"def\n", "ghi\n", "jkl\n"} {
		w.Write([]byte(line))
		readLine()
	}
	if want := "abc def ghi jkl"; strings.Join(got, " ") != want {
		t.Errorf("followed %q, want %q", strings.Join(got, " "), want)
	}
	files, _ := logrotate.Files(base)
	if len(files) != 2 {
		t.Errorf("log files = %v, want 2 (the test must rotate and prune)", files)
	}
}
