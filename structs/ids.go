package structs

import (
	"strings"

	"github.com/google/uuid"
)

// GenerateUUID returns a random RFC 4122 UUID string, used for the IDs of
// evaluations, allocations and nodes.
func GenerateUUID() string { return uuid.NewString() }

// ShortID returns the first 8 characters of an ID, as the CLI prints it.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// IsUUID reports whether s is a UUID in its canonical text form.
func IsUUID(s string) bool {
	u, err := uuid.Parse(s)
	return err == nil && u.String() == strings.ToLower(s) && len(s) == 36
}
