package structs

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
)

// Raft message types of namespaces and quotas. They are numbered apart
// from the types in rpc.go and operator.go so that types added there in
// the meantime do not collide with them; never renumber.
const (
	NamespaceUpsertRequestType MessageType = 24
	NamespaceDeleteRequestType MessageType = 25
	QuotaUpsertRequestType     MessageType = 26
	QuotaDeleteRequestType     MessageType = 27
)

// RPC methods of the namespace and quota endpoints.
const (
	RPCNamespaceUpsert = "Namespace.Upsert"
	RPCNamespaceDelete = "Namespace.Delete"
	RPCNamespaceGet    = "Namespace.Get"
	RPCNamespaceList   = "Namespace.List"
	RPCQuotaUpsert     = "Quota.Upsert"
	RPCQuotaDelete     = "Quota.Delete"
	RPCQuotaGet        = "Quota.Get"
	RPCQuotaList       = "Quota.List"
	RPCQuotaUsage      = "Quota.Usage"
)

// Limits on names and descriptions of namespaces and quotas (Nomad's).
const (
	maxDescriptionLength = 256
	// DefaultNamespaceDescription describes the default namespace until an
	// operator gives it another description.
	DefaultNamespaceDescription = "Default shared namespace"
)

// validObjectName is the shape of namespace and quota names: what Nomad
// accepts, so that names travel between the two.
var validObjectName = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)

// Errors of namespace and quota writes; each wraps ErrInvalid so that the
// HTTP API answers 400.
var (
	// ErrNamespaceInUse refuses to delete a namespace that still has jobs.
	ErrNamespaceInUse = fmt.Errorf("namespace has jobs: %w", ErrInvalid)
	// ErrQuotaInUse refuses to delete a quota a namespace still names.
	ErrQuotaInUse = fmt.Errorf("quota is used by a namespace: %w", ErrInvalid)
	// ErrDefaultNamespace refuses to delete the default namespace.
	ErrDefaultNamespace = fmt.Errorf("the default namespace cannot be deleted: %w", ErrInvalid)
)

// Namespace groups jobs (and their allocations and evaluations) under a
// name, and attaches a quota to them. The "default" namespace always
// exists: it is stored only once an operator changes it, and is never
// deleted. The JSON shape follows Nomad's.
type Namespace struct {
	Name        string
	Description string
	// Quota names the QuotaSpec that caps what the namespace's
	// allocations hold; empty means no cap.
	Quota string
	Meta  map[string]string

	CreateIndex uint64
	ModifyIndex uint64
}

// DefaultNamespaceObject returns the default namespace as it is before an
// operator changes it.
func DefaultNamespaceObject() *Namespace {
	return &Namespace{Name: DefaultNamespace, Description: DefaultNamespaceDescription}
}

// Validate checks the name, description and quota name; an error names
// the field and wraps ErrInvalid.
func (n *Namespace) Validate() error {
	var errs []error
	if !validObjectName.MatchString(n.Name) {
		errs = append(errs, fmt.Errorf("namespace name %q: want 1 to 128 letters, digits or dashes: %w", n.Name, ErrInvalid))
	}
	if len(n.Description) > maxDescriptionLength {
		errs = append(errs, fmt.Errorf("namespace %q: description is %d characters, at most %d: %w",
			n.Name, len(n.Description), maxDescriptionLength, ErrInvalid))
	}
	if n.Quota != "" && !validObjectName.MatchString(n.Quota) {
		errs = append(errs, fmt.Errorf("namespace %q: quota name %q: want 1 to 128 letters, digits or dashes: %w", n.Name, n.Quota, ErrInvalid))
	}
	return errors.Join(errs...)
}

// Copy returns a deep copy.
func (n *Namespace) Copy() *Namespace {
	if n == nil {
		return nil
	}
	c := *n
	c.Meta = maps.Clone(n.Meta)
	return &c
}

// NamespaceUpsertRequest creates or replaces namespaces.
type NamespaceUpsertRequest struct {
	Namespaces []*Namespace
	WriteRequest
}

// NamespaceDeleteRequest deletes namespaces by name.
type NamespaceDeleteRequest struct {
	Namespaces []string
	WriteRequest
}

// NamespaceSpecificRequest reads one namespace.
type NamespaceSpecificRequest struct {
	Name string
	QueryOptions
}

// SingleNamespaceResponse answers a NamespaceSpecificRequest; Namespace is
// nil when there is none of that name.
type SingleNamespaceResponse struct {
	Namespace *Namespace
	QueryMeta
}

// NamespaceListRequest lists namespaces (QueryOptions.Prefix filters by
// name).
type NamespaceListRequest struct {
	QueryOptions
}

// NamespaceListResponse lists namespaces sorted by name.
type NamespaceListResponse struct {
	Namespaces []*Namespace
	QueryMeta
}
