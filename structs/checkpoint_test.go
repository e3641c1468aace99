package structs

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckpointDir(t *testing.T) {
	tests := []struct {
		name, ns, job, group string
		rank                 int
		want                 string
	}{
		{"plain", "default", "train", "workers", 2, "/srv/ckpt/default/train/workers/2"},
		{"empty namespace", "", "train", "w", 0, "/srv/ckpt/default/train/w/0"},
		{"slash in job", "default", "a/b", "w", 1, "/srv/ckpt/default/a%2Fb/w/1"},
		{"dotdot job", "default", "..", "w", 1, "/srv/ckpt/default/%2E./w/1"},
		{"dot group", "ns", "j", ".", 3, "/srv/ckpt/ns/j/%2E/3"},
		{"escape sequence kept apart", "default", "a%2Fb", "w", 0, "/srv/ckpt/default/a%252Fb/w/0"},
		{"traversal", "default", "../../etc", "w", 0, "/srv/ckpt/default/%2E.%2F..%2Fetc/w/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckpointDir("/srv/ckpt", tt.ns, tt.job, tt.group, tt.rank)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("CheckpointDir = %q, want %q", got, tt.want)
			}
			if !strings.HasPrefix(got, "/srv/ckpt/") || filepath.Clean(got) != got {
				t.Errorf("CheckpointDir = %q escapes or is unclean", got)
			}
		})
	}
}

func TestCheckpointDirErrors(t *testing.T) {
	if _, err := CheckpointDir("rel", "default", "j", "g", 0); err == nil {
		t.Error("relative root: no error")
	}
	if _, err := CheckpointDir("/r", "default", "j", "g", -1); err == nil {
		t.Error("negative rank: no error")
	}
	if _, err := CheckpointDir("/r", "default", "", "g", 0); err == nil {
		t.Error("empty job: no error")
	}
}

func TestCheckpointValidate(t *testing.T) {
	tests := []struct {
		name string
		c    *CheckpointConfig
		want string
	}{
		{"nil", nil, ""},
		{"ok", &CheckpointConfig{Path: "/ckpt", Keep: 3}, ""},
		{"relative", &CheckpointConfig{Path: "ckpt"}, "must be absolute"},
		{"root", &CheckpointConfig{Path: "/"}, "not /"},
		{"keep", &CheckpointConfig{Keep: MaxCheckpointKeep + 1}, "checkpoint keep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("Validate = %q, want containing %q", got, tt.want)
			}
		})
	}
}
