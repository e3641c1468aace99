package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/droverhq/drover/structs"
)

// Variables is the /v1/vars and /v1/var/<path> endpoints (Nomad's
// variables, encrypted at rest by the servers).
type Variables struct{ c *Client }

// Variables returns the variable endpoints.
func (c *Client) Variables() *Variables { return &Variables{c: c} }

// ErrCASConflict is a check-and-set write or delete that lost: Conflict
// is the variable as it is (its items only if the token may read them;
// ModifyIndex 0 when there is none).
type ErrCASConflict struct {
	CheckIndex uint64
	Conflict   *structs.VariableDecrypted
}

func (e *ErrCASConflict) Error() string {
	return fmt.Sprintf("cas conflict: expected ModifyIndex %d; found %d", e.CheckIndex, e.Conflict.ModifyIndex)
}

// varPath escapes each segment of a variable path.
func varPath(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return "/v1/var/" + strings.Join(parts, "/")
}

// List returns the metadata of the variables whose path starts with
// q.Prefix (q.Namespace "*": in every namespace).
func (vs *Variables) List(ctx context.Context, q *QueryOptions) ([]*structs.VariableMetadata, *QueryMeta, error) {
	var out []*structs.VariableMetadata
	meta, err := vs.c.query(ctx, "/v1/vars", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Read returns the variable at path with its items; none is a 404
// (IsNotFound).
func (vs *Variables) Read(ctx context.Context, path string, q *QueryOptions) (*structs.VariableDecrypted, *QueryMeta, error) {
	var out structs.VariableDecrypted
	meta, err := vs.c.query(ctx, varPath(path), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Put writes v. With checkIndex set the write is check-and-set (0: only
// if there is none) and a lost one is an *ErrCASConflict.
func (vs *Variables) Put(ctx context.Context, v *structs.VariableDecrypted, checkIndex *uint64, w *WriteOptions) (*structs.VariableDecrypted, *WriteMeta, error) {
	if v == nil {
		return nil, nil, errors.New("put variable: missing variable")
	}
	var out structs.VariableDecrypted
	meta, err := vs.c.write(ctx, http.MethodPut, varPath(v.Path), v, &out, w, casParams(checkIndex))
	if err != nil {
		return nil, nil, casError(err, checkIndex)
	}
	return &out, meta, nil
}

// Delete removes the variable at path, check-and-set as Put.
func (vs *Variables) Delete(ctx context.Context, path string, checkIndex *uint64, w *WriteOptions) (*WriteMeta, error) {
	meta, err := vs.c.write(ctx, http.MethodDelete, varPath(path), nil, nil, w, casParams(checkIndex))
	if err != nil {
		return nil, casError(err, checkIndex)
	}
	return meta, nil
}

func casParams(checkIndex *uint64) url.Values {
	if checkIndex == nil {
		return nil
	}
	return url.Values{"cas": {strconv.FormatUint(*checkIndex, 10)}}
}

// casError turns a 409 answer into an *ErrCASConflict.
func casError(err error, checkIndex *uint64) error {
	var se *StatusError
	if checkIndex == nil || !errors.As(err, &se) || se.Code != http.StatusConflict {
		return err
	}
	var conflict structs.VariableDecrypted
	if jerr := json.Unmarshal([]byte(se.Body), &conflict); jerr != nil {
		return err
	}
	return &ErrCASConflict{CheckIndex: *checkIndex, Conflict: &conflict}
}

// RootKeys is the variables' root keyring: /v1/operator/keyring.
type RootKeys struct{ c *Client }

// RootKeys returns the root keyring endpoints.
func (c *Client) RootKeys() *RootKeys { return &RootKeys{c: c} }

// List returns the root keys' metadata, oldest first.
func (k *RootKeys) List(ctx context.Context, q *QueryOptions) ([]*structs.RootKeyMeta, *QueryMeta, error) {
	var out []*structs.RootKeyMeta
	meta, err := k.c.query(ctx, "/v1/operator/keyring/keys", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Rotate makes a new root key the active one and returns its metadata.
func (k *RootKeys) Rotate(ctx context.Context, w *WriteOptions) (*structs.RootKeyMeta, *WriteMeta, error) {
	var out struct{ Key *structs.RootKeyMeta }
	meta, err := k.c.write(ctx, http.MethodPut, "/v1/operator/keyring/rotate", nil, &out, w, nil)
	if err != nil {
		return nil, nil, err
	}
	return out.Key, meta, nil
}
