//go:build linux

package command

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/droverhq/drover/structs"
)

// terminalFd returns the descriptor of f when f is a terminal.
func terminalFd(f any) (int, bool) {
	file, ok := f.(*os.File)
	if !ok {
		return 0, false
	}
	fd := int(file.Fd())
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return fd, err == nil
}

// makeRaw puts the terminal fd in raw mode (cfmakeraw's settings) and
// returns what restores it.
func makeRaw(fd int) (restore func(), err error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, fmt.Errorf("read terminal settings: %w", err)
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN] = 1
	raw.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, fmt.Errorf("set terminal raw: %w", err)
	}
	var once sync.Once
	return func() { once.Do(func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }) }, nil
}

// terminalSize returns the size of the terminal fd.
func terminalSize(fd int) (structs.TerminalSize, bool) {
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil || ws.Row == 0 || ws.Col == 0 {
		return structs.TerminalSize{}, false
	}
	return structs.TerminalSize{Height: ws.Row, Width: ws.Col}, true
}

// watchSize sends the terminal's size to out now (out must have room
// for one) and again on each SIGWINCH, until stop is called.
func watchSize(fd int, out chan<- structs.TerminalSize) (stop func()) {
	if size, ok := terminalSize(fd); ok {
		out <- size
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-winch:
			}
			size, ok := terminalSize(fd)
			if !ok {
				continue
			}
			select {
			case out <- size:
			case <-done:
				return
			}
		}
	})
	return func() {
		signal.Stop(winch)
		close(done)
		wg.Wait()
	}
}
