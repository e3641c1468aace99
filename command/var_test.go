package command

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestVarCommands runs put, get, list and purge against a dev agent,
// with check-and-set conflicts, stdin specs, and bad input refused.
func TestVarCommands(t *testing.T) {
	addr := startDevAgent(t)
	expect := func(wantCode int, want string, args ...string) string {
		t.Helper()
		code, stdout, stderr := run(t, addr, args...)
		if code != wantCode || !strings.Contains(stdout+stderr, want) {
			t.Fatalf("drover %s: got exit %d, output %q %q; want exit %d with %q",
				strings.Join(args, " "), code, stdout, stderr, wantCode, want)
		}
		return stdout
	}
	expect(0, `Created variable "nomad/jobs/web" with modify index`, "var", "put", "nomad/jobs/web", "db_pass=s3cret", "user=app")
	expect(0, "s3cret", "var", "get", "-item", "db_pass", "nomad/jobs/web")
	got := expect(0, "db_pass", "var", "get", "-out", "json", "nomad/jobs/web")
	var v struct {
		Path        string
		ModifyIndex uint64
		Items       map[string]string
	}
	if err := json.Unmarshal([]byte(got), &v); err != nil || v.Items["user"] != "app" || v.ModifyIndex == 0 {
		t.Fatalf("var get -out json = %q (%v)", got, err)
	}
	expect(0, `user = "app"`, "var", "get", "-out", "hcl", "nomad/jobs/web")
	expect(1, "Check-index conflict", "var", "put", "-check-index", "0", "nomad/jobs/web", "db_pass=x")
	expect(0, "Created", "var", "put", "-check-index", itoa(v.ModifyIndex), "nomad/jobs/web", "db_pass=n3w")
	expect(0, "n3w", "var", "get", "-item", "db_pass", "nomad/jobs/web")

	code, stdout, stderr := runIO(t, addr, strings.NewReader("path = \"app/cfg\"\nitems {\n  mode = \"fast\"\n}\n"), "var", "put", "-in", "hcl", "app/cfg", "-")
	if code != 0 {
		t.Fatalf("var put from HCL stdin: %d %q %q", code, stdout, stderr)
	}
	expect(0, "fast", "var", "get", "-item", "mode", "app/cfg")
	list := expect(0, "nomad/jobs/web", "var", "list")
	if !strings.Contains(list, "app/cfg") {
		t.Errorf("var list = %q, want app/cfg too", list)
	}
	if l := expect(0, "app/cfg", "var", "list", "app/"); strings.Contains(l, "nomad/jobs/web") {
		t.Errorf("var list app/ = %q, want only app/cfg", l)
	}

	expect(1, "want only letters", "var", "put", "bad path", "k=v")
	expect(1, "under nomad/ only nomad/jobs", "var", "put", "nomad/secret", "k=v")
	expect(1, "want key=value", "var", "put", "a", "novalue")
	expect(1, "not found", "var", "get", "nope")

	expect(0, "active", "operator", "root", "keyring", "list")
	rotated := expect(0, "active", "operator", "root", "keyring", "rotate")
	if keys := expect(0, "inactive", "operator", "root", "keyring", "list"); !strings.Contains(keys, strings.Fields(strings.Split(rotated, "\n")[1])[0]) {
		t.Errorf("keyring list = %q, want the rotated key %q", keys, rotated)
	}
	expect(0, "fast", "var", "get", "-item", "mode", "app/cfg") // sealed with the old key, still readable
	expect(0, `Successfully purged variable "app/cfg"!`, "var", "purge", "app/cfg")
	expect(1, "not found", "var", "get", "app/cfg")

	// Nomad's raw API: a 409 carries the current variable; DELETE is 204.
	req, _ := http.NewRequest(http.MethodPut, addr+"/v1/var/nomad/jobs/web?cas=1", strings.NewReader(`{"Items":{"a":"b"}}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var conflict struct{ ModifyIndex uint64 }
	_ = json.NewDecoder(resp.Body).Decode(&conflict)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || conflict.ModifyIndex == 0 {
		t.Errorf("PUT with a stale cas = %d %+v, want 409 with the variable", resp.StatusCode, conflict)
	}
	req, _ = http.NewRequest(http.MethodDelete, addr+"/v1/var/nomad/jobs/web", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE = %d, want 204", resp.StatusCode)
	}
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
