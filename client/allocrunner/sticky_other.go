//go:build !unix

package allocrunner

import (
	"errors"
	"os"
)

var errStickyUnsupported = errors.New("sticky data moves need a unix client")

func openDirAt(*os.File, string) (*os.File, error) { return nil, errStickyUnsupported }

func renameAt(*os.File, string, *os.File) error { return errStickyUnsupported }
