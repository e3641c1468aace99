package client

import (
	"errors"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestRestartAllocUnknown(t *testing.T) {
	c := &Client{}
	err := c.RestartAlloc(structs.GenerateUUID(), "t")
	if !errors.Is(err, ErrUnknownAlloc) || !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("got %v, want %v wrapping %v", err, ErrUnknownAlloc, structs.ErrNotFound)
	}
}
