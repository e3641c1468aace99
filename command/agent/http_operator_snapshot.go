package agent

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/droverhq/drover/server"
	"github.com/droverhq/drover/structs"
)

// maxSnapshotUpload bounds a restore's request body, as the RPC layer
// bounds the request that carries it on.
const maxSnapshotUpload = structs.SnapshotMaxUpload

// snapshotRoutes serves `drover operator snapshot`, on Nomad's paths: GET
// answers the archive, PUT restores one.
func (h *httpAPI) snapshotRoutes(m *routeMux) {
	m.HandleFunc("GET /v1/operator/snapshot", h.snapshotSave)
	m.HandleFunc("PUT /v1/operator/snapshot", h.wrap(h.snapshotRestore))
	m.HandleFunc("POST /v1/operator/snapshot", h.wrap(h.snapshotRestore))
}

// snapshotSave answers the archive as application/octet-stream with a
// Digest header (sha-256, base64, RFC 3230) over the body, so that the
// client can check what it received, and X-Nomad-Index set to the
// snapshot's Raft index. ?stale lets a follower answer from its own state.
func (h *httpAPI) snapshotSave(w http.ResponseWriter, r *http.Request) {
	o, err := parseQuery(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	req := &server.SnapshotSaveRequest{QueryOptions: structs.QueryOptions{Region: o.Region, AllowStale: o.AllowStale}}
	var resp server.SnapshotSaveResponse
	if err := h.rpc(r, server.RPCSnapshotSave, req, &resp); err != nil {
		h.writeError(w, r, err)
		return
	}
	sum := sha256.Sum256(resp.Archive)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(resp.Archive)))
	w.Header().Set("Digest", "sha-256="+base64.StdEncoding.EncodeToString(sum[:]))
	setIndex(w, resp.Meta.Index)
	if _, err := w.Write(resp.Archive); err != nil {
		h.logger.Debug("http: write snapshot", "error", err)
	}
}

// snapshotRestore takes an archive as the body and restores it; a damaged
// archive is a 400 and changes nothing. It answers {"Index": N} with the
// snapshot's description.
func (h *httpAPI) snapshotRestore(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	if r.Body == nil {
		return nil, errorf(http.StatusBadRequest, "missing request body: send a snapshot archive")
	}
	archive, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSnapshotUpload))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, errorf(http.StatusRequestEntityTooLarge, "snapshot archive larger than %d bytes", tooBig.Limit)
	case err != nil:
		return nil, errorf(http.StatusBadRequest, "read snapshot archive: %v", err)
	case len(archive) == 0:
		return nil, errorf(http.StatusBadRequest, "empty request body: send a snapshot archive")
	}
	req := &server.SnapshotRestoreRequest{Archive: archive, WriteRequest: structs.WriteRequest{Region: o.Region}}
	var resp server.SnapshotRestoreResponse
	if err := h.rpc(r, server.RPCSnapshotRestore, req, &resp); err != nil {
		return nil, err
	}
	setIndex(w, resp.Index)
	return &resp, nil
}
