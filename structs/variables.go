package structs

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Raft message types of variables and their root keys (numbers 90-94 are
// this feature's).
const (
	VariableUpsertRequestType    MessageType = 90
	VariableDeleteRequestType    MessageType = 91
	RootKeyMetaUpsertRequestType MessageType = 92
)

// RPC methods of variables: Nomad's Variables endpoint, the reads a
// client makes for an allocation's templates (AllocRead, AllocList), and
// the server-to-server fetch of a root key (RootKey.Get).
const (
	RPCVariablesUpsert    = "Variables.Upsert"
	RPCVariablesDelete    = "Variables.Delete"
	RPCVariablesRead      = "Variables.Read"
	RPCVariablesList      = "Variables.List"
	RPCVariablesAllocRead = "Variables.AllocRead"
	RPCVariablesAllocList = "Variables.AllocList"
	RPCRootKeyGet         = "RootKey.Get"
	RPCRootKeyRotate      = "RootKey.Rotate"
	RPCRootKeyList        = "RootKey.List"
)

// MaxVariablePathLength is the longest variable path, in bytes.
const MaxVariablePathLength = 128

// validVariablePath is Nomad's shape of a variable path.
var validVariablePath = regexp.MustCompile(`^[a-zA-Z0-9\-_~/]{1,128}$`)

// VariableMetadata is what a variable list shows: everything but the
// items. Field names are Nomad's (api.VariableMetadata).
type VariableMetadata struct {
	Namespace   string
	Path        string
	CreateIndex uint64
	ModifyIndex uint64
	// CreateTime and ModifyTime are Unix nanoseconds.
	CreateTime int64
	ModifyTime int64
	// Lock is Nomad's variable lock, which Drover does not have: a
	// request that sets it is refused.
	Lock *VariableLock `json:",omitempty"`
}

// VariableLock is Nomad's lock on a variable (refused by Drover).
type VariableLock struct {
	ID        string
	TTL       string
	LockDelay string
}

// VariableItems are a variable's keys and secret values.
type VariableItems map[string]string

// VariableDecrypted is a variable in the clear: what the API takes and
// answers (Nomad's api.Variable). It is never stored nor written to the
// Raft log.
type VariableDecrypted struct {
	VariableMetadata
	Items VariableItems
}

// VariableEncrypted is a variable as the state store, the Raft log and
// snapshots hold it: the metadata in the clear, the items sealed with
// AES-256-GCM under root key KeyID, bound to the namespace and path.
type VariableEncrypted struct {
	VariableMetadata
	KeyID string
	Nonce []byte
	Data  []byte
}

// Copy returns a deep copy of v.
func (v *VariableEncrypted) Copy() *VariableEncrypted {
	if v == nil {
		return nil
	}
	c := *v
	c.Nonce = slices.Clone(v.Nonce)
	c.Data = slices.Clone(v.Data)
	if v.Lock != nil {
		l := *v.Lock
		c.Lock = &l
	}
	return &c
}

// Copy returns a deep copy of v.
func (v *VariableDecrypted) Copy() *VariableDecrypted {
	if v == nil {
		return nil
	}
	c := *v
	if v.Items != nil {
		c.Items = make(VariableItems, len(v.Items))
		for k, val := range v.Items {
			c.Items[k] = val
		}
	}
	if v.Lock != nil {
		l := *v.Lock
		c.Lock = &l
	}
	return &c
}

// ValidateVariablePath refuses (ErrInvalid) a path that is not Nomad's
// shape: 1 to 128 letters, digits, -, _, ~ or /, no empty segment, and
// under the reserved nomad/ prefix only nomad/jobs and below.
func ValidateVariablePath(path string) error {
	bad := func(why string) error {
		return fmt.Errorf("variable path %q: %s: %w", clip(path), why, ErrInvalid)
	}
	switch {
	case path == "":
		return bad("missing path")
	case len(path) > MaxVariablePathLength:
		return bad(fmt.Sprintf("longer than %d bytes", MaxVariablePathLength))
	case !validVariablePath.MatchString(path):
		return bad("want only letters, digits, -, _, ~ and /")
	case strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") || strings.Contains(path, "//"):
		return bad("a path has no leading, trailing or doubled /")
	case path == "nomad" || (strings.HasPrefix(path, "nomad/") && path != "nomad/jobs" && !strings.HasPrefix(path, "nomad/jobs/")):
		return bad("under nomad/ only nomad/jobs and its subpaths may be written")
	}
	return nil
}

// ValidateVariable checks a variable to write: its path, its items (at
// least one, non-empty keys) and their size under l.VariableMaxSize.
func ValidateVariable(v *VariableDecrypted, l Limits) error {
	if v == nil {
		return fmt.Errorf("missing variable: %w", ErrInvalid)
	}
	if err := ValidateVariablePath(v.Path); err != nil {
		return err
	}
	if v.Lock != nil {
		return fmt.Errorf("variable %q: locks are not supported by Drover: %w", v.Path, ErrInvalid)
	}
	if len(v.Items) == 0 {
		return fmt.Errorf("variable %q: a variable needs at least one item: %w", v.Path, ErrInvalid)
	}
	l = l.WithDefaults()
	size := 0
	for k, val := range v.Items {
		if k == "" {
			return fmt.Errorf("variable %q: an item has an empty key: %w", v.Path, ErrInvalid)
		}
		size += len(k) + len(val)
	}
	if size > l.VariableMaxSize {
		return fmt.Errorf("variable %q: items are %d bytes, over the limit %d (limits.variable_max_size): %w",
			v.Path, size, l.VariableMaxSize, ErrTooLarge)
	}
	return nil
}

// VariablesUpsertRequest writes a variable. With CheckIndex set the write
// is check-and-set: it happens only if the variable's ModifyIndex is
// *CheckIndex (0: only if it does not exist).
type VariablesUpsertRequest struct {
	Var        *VariableDecrypted
	CheckIndex *uint64
	WriteRequest
}

// VariablesUpsertResponse is the variable as written, or, when a
// check-and-set lost, Conflict: the variable as it is (its items only
// when the caller may read them; nil when there is none).
type VariablesUpsertResponse struct {
	Output   *VariableDecrypted
	Conflict *VariableDecrypted
	WriteMeta
}

// VariablesDeleteRequest deletes the variable at Path, check-and-set
// with CheckIndex as in VariablesUpsertRequest.
type VariablesDeleteRequest struct {
	Path       string
	CheckIndex *uint64
	WriteRequest
}

// VariablesDeleteResponse carries Conflict when a check-and-set lost.
type VariablesDeleteResponse struct {
	Conflict *VariableDecrypted
	WriteMeta
}

// VariablesReadRequest reads the variable at Path.
type VariablesReadRequest struct {
	Path string
	QueryOptions
}

// VariablesReadResponse is the variable, nil when there is none.
type VariablesReadResponse struct {
	Data *VariableDecrypted
	QueryMeta
}

// VariablesListRequest lists the metadata of the variables whose path
// starts with QueryOptions.Prefix, in QueryOptions.Namespace ("*": all
// namespaces).
type VariablesListRequest struct {
	QueryOptions
}

// VariablesListResponse is the metadata of the variables listed, sorted
// by namespace then path.
type VariablesListResponse struct {
	Data []*VariableMetadata
	QueryMeta
}

// VariablesAllocRequest is a client's read for a template of an
// allocation it runs: the node authenticates with its secret, and the
// server answers only paths within the allocation's implicit prefix
// (nomad/jobs/<job>[/<group>[/<task>]]). Path is read, or with List the
// variables under Path as a prefix are listed.
type VariablesAllocRequest struct {
	NodeID     string
	NodeSecret string
	AllocID    string
	Task       string
	Path       string
	QueryOptions
}

// VariablesAllocResponse answers a VariablesAllocRequest: Data for a
// read, List (items included) for a list.
type VariablesAllocResponse struct {
	Data *VariableDecrypted
	List []*VariableDecrypted
	QueryMeta
}

// WorkloadVariablePrefixes are the variable paths an allocation's task may
// read without a policy, as Nomad's workload identity default: its job's,
// its group's and its task's.
func WorkloadVariablePrefixes(jobID, group, task string) []string {
	base := "nomad/jobs/" + jobID
	return []string{base, base + "/" + group, base + "/" + group + "/" + task}
}

// WorkloadJobID is the job ID a task's variables are under: the root
// parent of a periodic or dispatched child (`<parent>/periodic-<t>`,
// `<parent>/dispatch-<x>`, nested), else id itself. An ID with '/' that
// is not of that shape is not ok: nomad/jobs/<id> would name another
// job's group.
func WorkloadJobID(id string) (string, bool) {
	for {
		i := strings.LastIndexByte(id, '/')
		if i < 0 {
			return id, true
		}
		rest := id[i:]
		if !strings.HasPrefix(rest, PeriodicLaunchSuffix) && !strings.HasPrefix(rest, DispatchLaunchSuffix) {
			return "", false
		}
		id = id[:i]
	}
}

// WorkloadMayRead reports whether a task may read the variable at path:
// one of WorkloadVariablePrefixes exactly.
func WorkloadMayRead(path, jobID, group, task string) bool {
	return slices.Contains(WorkloadVariablePrefixes(jobID, group, task), path)
}

// RootKeyStateActive is the state of the root key new variables are
// encrypted with.
const RootKeyStateActive = "active"

// RootKeyStateInactive is the state of an older root key: it still
// decrypts the variables sealed with it, and seals nothing new.
const RootKeyStateInactive = "inactive"

// RootKeyMeta is what Raft holds of a root key: never the key itself,
// which each server keeps in its keystore directory.
type RootKeyMeta struct {
	KeyID       string
	Algorithm   string
	State       string
	CreateTime  int64
	CreateIndex uint64
	ModifyIndex uint64
}

// RootKey is a root key with its material (32 bytes for AES-256-GCM).
// It travels only between servers (RootKey.Get) and to keystore files.
type RootKey struct {
	Meta *RootKeyMeta
	Key  []byte
}

// RootKeyMetaUpsertRequest records a new root key's metadata and, for a
// rotation, marks the keys in Deactivate inactive, in one entry.
type RootKeyMetaUpsertRequest struct {
	Meta       *RootKeyMeta
	Deactivate []string
	WriteRequest
}

// RootKeyRotateRequest makes a new root key the active one (Nomad's
// operator root keyring rotate). Full (re-encrypt every variable) and
// algorithms other than aes256-gcm are refused.
type RootKeyRotateRequest struct {
	Full      bool
	Algorithm string
	WriteRequest
}

// RootKeyRotateResponse is the new key's metadata.
type RootKeyRotateResponse struct {
	Key *RootKeyMeta
	WriteMeta
}

// RootKeyListRequest lists the root keys' metadata.
type RootKeyListRequest struct {
	QueryOptions
}

// RootKeyListResponse is the root keys' metadata, oldest first.
type RootKeyListResponse struct {
	Keys []*RootKeyMeta
	QueryMeta
}

// RootKeyGetRequest asks a server for the root key KeyID. Only servers
// may ask (the RPC layer refuses it on a client's session).
type RootKeyGetRequest struct {
	KeyID string
	// fromServer is set by the receiving server's RPC layer when the call
	// came over another server's connection; it never crosses the wire,
	// and an in-process call never has it.
	fromServer bool
	QueryOptions
}

// MarkFromServer records that the request came over a server's
// connection (the RPC layer calls it; see FromServer).
func (r *RootKeyGetRequest) MarkFromServer() { r.fromServer = true }

// FromServer reports whether MarkFromServer was called.
func (r *RootKeyGetRequest) FromServer() bool { return r.fromServer }

// RootKeyGetResponse is the key, nil when the server does not have it.
type RootKeyGetResponse struct {
	Key *RootKey
	QueryMeta
}

// VariableUpsertEntry is the Raft entry of a variable write: sealed.
type VariableUpsertEntry struct {
	Var        *VariableEncrypted
	CheckIndex *uint64
}

// VariableDeleteEntry is the Raft entry of a variable delete.
type VariableDeleteEntry struct {
	Namespace  string
	Path       string
	CheckIndex *uint64
}
