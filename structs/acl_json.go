package structs

import (
	"encoding/json"
	"fmt"
	"time"
)

// aclTokenJSON is ACLToken without its methods, so that UnmarshalJSON
// does not recurse.
type aclTokenJSON ACLToken

// UnmarshalJSON reads ExpirationTTL as Nomad's client writes it (a
// duration string such as "1h", "" for none) or as nanoseconds, which
// Drover writes and Nomad's client also reads.
func (t *ACLToken) UnmarshalJSON(b []byte) error {
	var v struct {
		*aclTokenJSON
		ExpirationTTL any
	}
	v.aclTokenJSON = (*aclTokenJSON)(t)
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch ttl := v.ExpirationTTL.(type) {
	case nil:
	case string:
		if ttl == "" {
			return nil
		}
		d, err := time.ParseDuration(ttl)
		if err != nil {
			return fmt.Errorf("ExpirationTTL: %w", err)
		}
		t.ExpirationTTL = d
	case float64:
		if ttl != float64(int64(ttl)) {
			return fmt.Errorf("ExpirationTTL: %v is not a whole number of nanoseconds", ttl)
		}
		t.ExpirationTTL = time.Duration(ttl)
	default:
		return fmt.Errorf("ExpirationTTL: want a duration string or nanoseconds, got %T", ttl)
	}
	return nil
}
