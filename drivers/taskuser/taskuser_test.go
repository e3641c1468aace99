package taskuser

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantUID uint32
		wantErr string
	}{
		{"default is nobody", "", 65534, ""},
		{"by name", "root", 0, ""},
		{"by id", "0", 0, ""},
		{"unknown id", "4242424", 4242424, ""},
		{"unknown name", "no-such-user-drover", 0, `user "no-such-user-drover"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := Lookup(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Lookup(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Lookup(%q): %v", tt.in, err)
			}
			if u.UID != tt.wantUID {
				t.Errorf("Lookup(%q).UID = %d, want %d", tt.in, u.UID, tt.wantUID)
			}
		})
	}
}

func TestStringParse(t *testing.T) {
	for _, u := range []*User{
		{Name: "nobody", UID: 65534, GID: 65534},
		{Name: "alice", UID: 1000, GID: 1000, Groups: []uint32{4, 27}},
	} {
		got, err := Parse(u.String())
		if err != nil {
			t.Fatalf("Parse(%q): %v", u.String(), err)
		}
		if !reflect.DeepEqual(got, u) {
			t.Errorf("Parse(%q) = %+v, want %+v", u.String(), got, u)
		}
	}
	if _, err := Parse("nobody:x:1:"); err == nil {
		t.Error("Parse of a bad uid: want an error")
	}
}

func TestCheckReach(t *testing.T) {
	nobody := &User{Name: "nobody", UID: 65534, GID: 65534}
	base := t.TempDir()
	open := filepath.Join(base, "open", "task")
	closed := filepath.Join(base, "closed", "task")
	for _, d := range []string{open, closed} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// t.TempDir's own parent is 0700; open the path down to base.
	for _, d := range []string{filepath.Dir(base), base, filepath.Dir(open)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Dir(closed), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := nobody.CheckReach(open); err != nil {
		t.Errorf("CheckReach(%s) = %v, want nil", open, err)
	}
	err := nobody.CheckReach(closed)
	if err == nil || !strings.Contains(err.Error(), filepath.Dir(closed)+" (mode 0700") {
		t.Errorf("CheckReach(%s) = %v, want an error naming %s", closed, err, filepath.Dir(closed))
	}
	if err := (&User{Name: "root"}).CheckReach(closed); err != nil {
		t.Errorf("root: CheckReach = %v, want nil", err)
	}
}
