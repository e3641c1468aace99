package hostexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/droverhq/drover/drivers"
)

// MaxStateFile is the most ReadStateFile reads: the pid and status files
// drivers leave beside their tasks are a few hundred bytes.
const MaxStateFile = 64 << 10

// ReadStateFile reads a small state file a driver wrote beside a task
// (a pid or exit status file) without trusting what is at the path: a
// symlink is not followed, anything but a regular file (a FIFO that
// would block, a device that never ends) is refused, and at most
// MaxStateFile bytes are read. A missing file is an error wrapping
// os.ErrNotExist.
func ReadStateFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("state file %s: a symlink", path)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("state file %s: not a regular file (%s)", path, fi.Mode().Type())
	}
	buf, err := io.ReadAll(io.LimitReader(f, MaxStateFile+1))
	if err != nil {
		return nil, err
	}
	if len(buf) > MaxStateFile {
		return nil, fmt.Errorf("state file %s: over %d bytes", path, MaxStateFile)
	}
	return buf, nil
}

// ExitStatus is the content of the exit status file a driver's process
// outside the agent (raw_exec's executor, exec's init) writes when the
// task ends, for an agent that re-attached to read.
type ExitStatus struct {
	ExitCode int
	Signal   int
}

// ReadExitStatus reads an exit status file (ReadStateFile);
// os.ErrNotExist means the task has not ended, or its watcher died first.
func ReadExitStatus(path string) (*drivers.ExitResult, error) {
	buf, err := ReadStateFile(path)
	if err != nil {
		return nil, err
	}
	var st ExitStatus
	if err := json.Unmarshal(buf, &st); err != nil {
		return nil, fmt.Errorf("status file %s: %w", path, err)
	}
	return &drivers.ExitResult{ExitCode: st.ExitCode, Signal: st.Signal}, nil
}

// WriteStateFile writes v as JSON at path by rename, so that a reader
// sees all of it or nothing.
func WriteStateFile(path string, v any, perm os.FileMode) error {
	buf, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
