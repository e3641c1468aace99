//go:build !linux

package command

import (
	"errors"

	"github.com/droverhq/drover/structs"
)

// Terminal handling is Linux-only for now: elsewhere nothing is a
// terminal, so alloc exec defaults to no TTY and -t gets the remote
// terminal without local raw mode or size updates.

func terminalFd(any) (int, bool) { return 0, false }

func makeRaw(int) (func(), error) {
	return nil, errors.New("raw terminal mode is not supported on this system")
}

func terminalSize(int) (structs.TerminalSize, bool) { return structs.TerminalSize{}, false }

func watchSize(int, chan<- structs.TerminalSize) func() { return func() {} }
