package server

import (
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
)

// AnonymousPolicy is the policy a request without a token gets, when an
// operator created one by this name (Nomad's convention).
const AnonymousPolicy = "anonymous"

// aclCacheSize bounds the compiled ACLs kept; the cache is emptied when
// it is full (policy sets are few, so it rarely is).
const aclCacheSize = 512

// errPermissionDenied is the one answer to a request its token may not
// make, as Nomad words it ("Permission denied").
var errPermissionDenied error = structs.ErrPermissionDenied

// aclResolver turns a token secret into the ACL that checks its requests.
// Compiled ACLs are cached by the policies' names and content hashes, so
// a changed policy is never served stale.
type aclResolver struct {
	mu    sync.Mutex
	cache map[string]*acl.ACL
}

// resolveToken returns the ACL of the request's token and the token
// (nil for an anonymous request). With ACLs off every request gets the
// management ACL. An unknown or expired secret is refused.
func (s *Server) resolveToken(secret string) (*acl.ACL, *structs.ACLToken, error) {
	if !s.config.ACLEnabled {
		return acl.ManagementACL, nil, nil
	}
	st := s.State()
	var policies []string
	var token *structs.ACLToken
	if secret == "" {
		policies = []string{AnonymousPolicy}
	} else {
		var err error
		token, err = st.ACLTokenBySecret(nil, secret)
		if err != nil {
			return nil, nil, err
		}
		if token == nil {
			return nil, nil, fmt.Errorf("%w: ACL token not found", structs.ErrPermissionDenied)
		}
		if token.IsExpired(time.Now()) {
			return nil, nil, fmt.Errorf("%w: ACL token expired", structs.ErrPermissionDenied)
		}
		if token.IsManagement() {
			return acl.ManagementACL, token, nil
		}
		policies = token.Policies
	}
	compiled, err := s.aclFor(policies)
	return compiled, token, err
}

// aclFor compiles the named policies (unknown names grant nothing).
func (s *Server) aclFor(names []string) (*acl.ACL, error) {
	st := s.State()
	var stored []*structs.ACLPolicy
	var key strings.Builder
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for _, name := range slices.Compact(sorted) {
		p, err := st.ACLPolicyByName(nil, name)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue
		}
		stored = append(stored, p)
		// By content, not index: a restored snapshot may reuse an index.
		key.WriteString(p.Name)
		key.WriteByte('@')
		key.WriteString(hex.EncodeToString(p.Hash))
		key.WriteByte(',')
	}
	r := &s.aclCache
	r.mu.Lock()
	cached, ok := r.cache[key.String()]
	r.mu.Unlock()
	if ok {
		return cached, nil
	}
	parsed := make([]*acl.Policy, 0, len(stored))
	for _, p := range stored {
		pol, err := acl.Parse(p.Name, p.Rules)
		if err != nil {
			// Stored rules parsed when they were applied; a newer
			// binary that refuses them grants nothing rather than fail.
			s.logger.Warn("stored ACL policy does not parse; it grants nothing", "policy", p.Name, "error", err)
			continue
		}
		parsed = append(parsed, pol)
	}
	compiled := acl.New(false, parsed)
	r.mu.Lock()
	if r.cache == nil || len(r.cache) >= aclCacheSize {
		r.cache = make(map[string]*acl.ACL)
	}
	r.cache[key.String()] = compiled
	r.mu.Unlock()
	return compiled, nil
}

// authorize resolves token and checks allow against its ACL; a refusal
// is errPermissionDenied.
func (s *Server) authorize(token string, allow func(*acl.ACL) bool) (*acl.ACL, error) {
	a, _, err := s.resolveToken(token)
	if err != nil {
		return nil, err
	}
	if !allow(a) {
		return nil, errPermissionDenied
	}
	return a, nil
}

// anyNS checks that token may use capability in some namespace: the
// check before a request's object (and so its namespace) is looked up,
// so that a caller who may do nothing learns nothing.
func (s *Server) anyNS(token, capability string) (*acl.ACL, error) {
	return s.authorize(token, func(a *acl.ACL) bool { return a.AllowNamespaceOperation("*", capability) })
}

// allowNS checks that token may use capability in namespace ns.
func (s *Server) allowNS(token, ns, capability string) error {
	_, err := s.authorize(token, func(a *acl.ACL) bool { return a.AllowNamespaceOperation(ns, capability) })
	return err
}

// nsFilter returns which namespaces a list may show: those token may use
// capability in. The request's namespace "*" lists across namespaces;
// any other namespace must be allowed itself.
func (s *Server) nsFilter(token, ns, capability string) (func(string) bool, error) {
	a, _, err := s.resolveToken(token)
	if err != nil {
		return nil, err
	}
	if a.IsManagement() {
		return func(string) bool { return true }, nil
	}
	// For "*", a token that may do this in no namespace at all is
	// refused rather than shown an empty list.
	if !a.AllowNamespaceOperation(ns, capability) {
		return nil, errPermissionDenied
	}
	return func(n string) bool { return a.AllowNamespaceOperation(n, capability) }, nil
}

// requireManagement checks that token is a management token.
func (s *Server) requireManagement(token string) error {
	_, err := s.authorize(token, (*acl.ACL).IsManagement)
	return err
}

// authorizeNode checks that a node RPC carries the secret of the node it
// names. It holds with ACLs off too: a node is its secret. A refusal is
// logged, as an audit of a forged node call.
func (s *Server) authorizeNode(method, nodeID, secret string) error {
	node, err := s.State().NodeByID(nil, nodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return fmt.Errorf("node %s: %w", nodeID, structs.ErrUnknownNode)
	}
	if node.SecretID == "" || subtle.ConstantTimeCompare([]byte(node.SecretID), []byte(secret)) != 1 {
		s.logger.Warn("node call refused: wrong node secret", "method", method, "node_id", nodeID)
		return errPermissionDenied
	}
	return nil
}

// authorizeSubmit checks that token may submit job: submit-job in its
// namespace, write on the queue it names (other than the default), and
// submit-shared-gpu when a task asks for a fraction of a GPU.
func (s *Server) authorizeSubmit(token string, job *structs.Job) error {
	if job == nil {
		// Refused as invalid by the endpoint, once the caller may submit.
		return s.allowNS(token, structs.DefaultNamespace, acl.CapSubmitJob)
	}
	ns := job.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	_, err := s.authorize(token, func(a *acl.ACL) bool {
		if !a.AllowNamespaceOperation(ns, acl.CapSubmitJob) {
			return false
		}
		if !a.AllowQueue(structs.QueueName(job.Queue), true) {
			return false
		}
		return !jobSharesGPU(job) || a.AllowNamespaceOperation(ns, acl.CapSubmitSharedGPU)
	})
	return err
}

// jobSharesGPU reports whether a task of job asks for a fraction of a GPU.
func jobSharesGPU(job *structs.Job) bool {
	for _, tg := range job.TaskGroups {
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			if t == nil || t.Resources == nil {
				continue
			}
			for _, d := range t.Resources.Devices {
				if d != nil && d.IsFractional() {
					return true
				}
			}
		}
	}
	return false
}

// writeNamespace is a write's namespace, the default when it names none.
func writeNamespace(w structs.WriteRequest) string {
	if w.Namespace == "" {
		return structs.DefaultNamespace
	}
	return w.Namespace
}

// keepAllocs returns the allocations whose namespace keep admits.
func keepAllocs(allocs []*structs.Allocation, keep func(string) bool) []*structs.Allocation {
	out := allocs[:0:0]
	for _, a := range allocs {
		if keep(a.Namespace) {
			out = append(out, a)
		}
	}
	return out
}

// keepEvals returns the evaluations whose namespace keep admits.
func keepEvals(evals []*structs.Evaluation, keep func(string) bool) []*structs.Evaluation {
	out := evals[:0:0]
	for _, e := range evals {
		if keep(e.Namespace) {
			out = append(out, e)
		}
	}
	return out
}

// checkAllocOwner checks that allocation id, when it exists, is placed
// on node: a node reports on its own allocations only.
func (s *Server) checkAllocOwner(nodeID, id string) error {
	a, err := s.State().AllocByID(nil, id)
	if err != nil {
		return err
	}
	if a != nil && a.NodeID != nodeID {
		s.logger.Warn("node call refused: allocation of another node", "method", structs.RPCNodeUpdateAlloc, "node_id", nodeID, "alloc_id", id)
		return fmt.Errorf("%w: allocation %s is not on node %s", structs.ErrPermissionDenied, id, nodeID)
	}
	return nil
}
