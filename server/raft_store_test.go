package server

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDamagedRaftStore: a server whose raft.db was truncated, emptied
// or scribbled over refuses to start with an error naming the file and
// both recovery steps, and does not panic.
func TestDamagedRaftStore(t *testing.T) {
	tests := []struct {
		name   string
		damage func(buf []byte) []byte
	}{
		{"truncated", func(buf []byte) []byte { return buf[:len(buf)/2] }},
		{"empty", func([]byte) []byte { return nil }},
		{"scribbled", func(buf []byte) []byte {
			r := rand.New(rand.NewPCG(5, 6))
			for i := 2 * os.Getpagesize(); i < len(buf); i++ {
				buf[i] = byte(r.Uint32())
			}
			return buf
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			s := startServer(t, cfg)
			if err := s.Shutdown(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(cfg.DataDir, "raft", "raft.db")
			buf, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tt.damage(buf), 0o600); err != nil {
				t.Fatal(err)
			}
			s2, err := NewServer(cfg)
			if err == nil {
				_ = s2.Shutdown()
				t.Fatal("NewServer started on a damaged raft.db")
			}
			if !errors.Is(err, ErrRaftStoreDamaged) {
				t.Errorf("got %v, want ErrRaftStoreDamaged", err)
			}
			for _, want := range []string{path, "drover operator snapshot restore", "fresh follower", cfg.DataDir} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
