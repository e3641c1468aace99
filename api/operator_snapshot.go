package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
)

const snapshotPath = "/v1/operator/snapshot"

// SnapshotRestoreResponse is the answer of a restore.
type SnapshotRestoreResponse struct {
	// Meta describes the snapshot restored: its Raft index and term in the
	// cluster it was saved from, and its size.
	Meta struct {
		ID          string
		Index, Term uint64
		Size        int64
	}
	// Index is the cluster's Raft index after the restore.
	Index uint64
}

// SnapshotSave streams a snapshot archive of the cluster's state from the
// leader (any server with q.AllowStale). The reader fails at its end when
// the body does not match the agent's Digest header; the caller closes it.
func (o *Operator) SnapshotSave(ctx context.Context, q *QueryOptions) (io.ReadCloser, *QueryMeta, error) {
	r := o.c.newRequest(http.MethodGet, snapshotPath)
	r.setQuery(q, o.c.cfg.WaitTime)
	resp, rtt, err := o.c.do(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	meta, err := parseQueryMeta(resp.Header)
	if err != nil {
		resp.Body.Close()
		return nil, nil, fmt.Errorf("GET %s: %w", snapshotPath, err)
	}
	meta.RequestTime = rtt
	body, err := digestReader(resp)
	if err != nil {
		resp.Body.Close()
		return nil, nil, fmt.Errorf("GET %s: %w", snapshotPath, err)
	}
	return body, meta, nil
}

// SnapshotRestore sends a snapshot archive to restore on the leader. The
// cluster's state is replaced by the archive's; a damaged archive is
// refused (a 400) and changes nothing.
func (o *Operator) SnapshotRestore(ctx context.Context, archive io.Reader, w *WriteOptions) (*SnapshotRestoreResponse, *WriteMeta, error) {
	if archive == nil {
		archive = bytes.NewReader(nil)
	}
	var out SnapshotRestoreResponse
	meta, err := o.c.write(ctx, http.MethodPut, snapshotPath, archive, &out, w, nil)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// digestReader wraps the body so that its end is checked against the
// Digest header (sha-256 only), when there is one.
func digestReader(resp *http.Response) (io.ReadCloser, error) {
	v := resp.Header.Get("Digest")
	if v == "" {
		return resp.Body, nil
	}
	algo, sum, ok := strings.Cut(v, "=")
	if !ok || !strings.EqualFold(algo, "sha-256") {
		return nil, fmt.Errorf("digest %q: want sha-256=<base64>", v)
	}
	want, err := base64.StdEncoding.DecodeString(sum)
	if err != nil || len(want) != sha256.Size {
		return nil, fmt.Errorf("digest %q: not a base64 SHA-256", v)
	}
	return &checkedBody{body: resp.Body, h: sha256.New(), want: want}, nil
}

// checkedBody hashes what is read and reports a mismatch instead of EOF.
type checkedBody struct {
	body io.ReadCloser
	h    hash.Hash
	want []byte
}

func (b *checkedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.h.Write(p[:n])
	if err == io.EOF && !bytes.Equal(b.h.Sum(nil), b.want) {
		return n, fmt.Errorf("snapshot download does not match its Digest header: %w", io.ErrUnexpectedEOF)
	}
	return n, err
}

func (b *checkedBody) Close() error { return b.body.Close() }
