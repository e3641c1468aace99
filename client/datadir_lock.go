package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// dataDirLockFile is the file a running client holds locked in its data
// dir, so that a second agent on the same dir refuses to start instead of
// judging the first one's state file damaged and killing its tasks.
const dataDirLockFile = "client.lock"

// errDataDirInUse: another running client holds the data dir.
var errDataDirInUse = errors.New("data dir in use by another running agent")

// lockDataDir takes the data dir's lock (flock, released when the file
// is closed or the process ends) or fails at once with errDataDirInUse.
func lockDataDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, dataDirLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w (stop it first, or give this one its own data_dir)", dir, errDataDirInUse)
		}
		return nil, fmt.Errorf("lock data dir %s: %w", path, err)
	}
	return f, nil
}
