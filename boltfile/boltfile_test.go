package boltfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	if err := Check(path); err != nil {
		t.Fatalf("missing file: got %v, want nil", err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		for i := 0; err == nil && i < 500; i++ {
			err = b.Put([]byte{byte(i), byte(i >> 8)}, make([]byte, 200))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := Check(path); err != nil {
		t.Fatalf("good file: got %v, want nil", err)
	}
	fi, _ := os.Stat(path)
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	if err := Check(path); !errors.Is(err, ErrDamaged) {
		t.Fatalf("truncated file: got %v, want ErrDamaged", err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if err := Check(path); !errors.Is(err, ErrDamaged) {
		t.Fatalf("empty file: got %v, want ErrDamaged", err)
	}
}
