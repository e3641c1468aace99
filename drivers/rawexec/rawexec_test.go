package rawexec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
)

func TestConformance(t *testing.T) {
	drivertest.Run(t, func() drivers.Driver { return New(nil) })
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name     string
		cfg      map[string]any
		wantCmd  string
		wantArgs []string
		wantErr  bool
	}{
		{"command only", map[string]any{"command": "echo"}, "echo", nil, false},
		{"any args", map[string]any{"command": "echo", "args": []any{"a", "b"}}, "echo", []string{"a", "b"}, false},
		{"string args", map[string]any{"command": "echo", "args": []string{"a"}}, "echo", []string{"a"}, false},
		{"missing command", map[string]any{"args": []any{"a"}}, "", nil, true},
		{"blank command", map[string]any{"command": "  "}, "", nil, true},
		{"non-string arg", map[string]any{"command": "echo", "args": []any{"a", 3}}, "", nil, true},
		{"args not a list", map[string]any{"command": "echo", "args": "a b"}, "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, args, err := parseConfig(tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseConfig() error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, drivers.ErrInvalidConfig) {
				t.Errorf("error %v is not ErrInvalidConfig", err)
			}
			if cmd != tt.wantCmd || strings.Join(args, "|") != strings.Join(tt.wantArgs, "|") {
				t.Errorf("parseConfig() = %q %q, want %q %q", cmd, args, tt.wantCmd, tt.wantArgs)
			}
		})
	}
}

func TestDefaultEnv(t *testing.T) {
	dir := t.TempDir()
	d := New(nil)
	cfg := &drivers.TaskConfig{
		ID:         "env",
		Config:     map[string]any{"command": "sh", "args": []any{"-c", `echo "PATH=$PATH"; echo "HOME=$HOME"`}},
		TaskDir:    dir,
		StdoutPath: filepath.Join(dir, "out"),
	}
	if _, err := d.Start(context.Background(), cfg); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer d.Destroy(cfg.ID)
	ch, err := d.Wait(context.Background(), cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res := <-ch; !res.Successful() {
		t.Fatalf("result = %v", res)
	}
	b, _ := os.ReadFile(cfg.StdoutPath)
	want := "PATH=" + DefaultPath + "\nHOME=" + dir + "\n"
	if string(b) != want {
		t.Errorf("stdout = %q, want %q", b, want)
	}
}

func TestCommandNotInTaskPath(t *testing.T) {
	dir := t.TempDir()
	d := New(nil)
	cfg := &drivers.TaskConfig{
		ID:      "nopath",
		Env:     map[string]string{"PATH": dir},
		Config:  map[string]any{"command": "sh"},
		TaskDir: dir,
	}
	_, err := d.Start(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "not found in task PATH") {
		t.Errorf("Start = %v, want a not-found error naming the task PATH", err)
	}
}
