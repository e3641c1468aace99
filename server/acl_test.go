package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// aclServer starts a lone server with ACLs on and bootstraps it; it
// returns the server and the management secret.
func aclServer(t *testing.T) (*Server, string) {
	t.Helper()
	cfg := testConfig(t)
	cfg.ACLEnabled = true
	s := startServer(t, cfg)
	waitFor(t, 10*time.Second, func() (bool, string) { return s.IsLeader(), "no leader" })
	var boot structs.ACLTokenUpsertResponse
	call(t, s, structs.RPCACLBootstrap, &structs.ACLTokenBootstrapRequest{}, &boot)
	if len(boot.Tokens) != 1 || !boot.Tokens[0].IsManagement() || boot.Tokens[0].SecretID == "" {
		t.Fatalf("bootstrap = %+v, want one management token", boot.Tokens)
	}
	return s, boot.Tokens[0].SecretID
}

// clientToken creates a policy with rules and a client token holding it.
func clientToken(t *testing.T, s *Server, mgmt, policy, rules string) *structs.ACLToken {
	t.Helper()
	up := &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: policy, Rules: rules}}}
	up.AuthToken = mgmt
	call(t, s, structs.RPCACLUpsertPolicies, up, &structs.GenericResponse{})
	tr := &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{{Name: policy + "-token", Policies: []string{policy}}}}
	tr.AuthToken = mgmt
	var resp structs.ACLTokenUpsertResponse
	call(t, s, structs.RPCACLUpsertTokens, tr, &resp)
	return resp.Tokens[0]
}

func isDenied(err error) bool { return errors.Is(err, structs.ErrPermissionDenied) }

// TestACL_EndpointsCheckTokens: with ACLs on, a request without a token
// is denied, a token whose policy grants the namespace is allowed, one
// for another namespace is denied, and lists show only what the token
// may read.
func TestACL_EndpointsCheckTokens(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	for _, ns := range []string{"team-a", "team-b"} {
		req := &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: ns}}}
		req.AuthToken = mgmt
		call(t, s, structs.RPCNamespaceUpsert, req, &structs.GenericResponse{})
	}
	teamA := clientToken(t, s, mgmt, "team-a-write", `namespace "team-a" { policy = "write" }`)

	register := func(token, ns, id string) error {
		job := gpuJob(id, structs.JobTypeBatch, 1, 0)
		job.Namespace = ns
		req := &structs.JobRegisterRequest{Job: job}
		req.AuthToken = token
		return s.RPC(structs.RPCJobRegister, req, &structs.JobRegisterResponse{})
	}
	if err := register("", "team-a", "anon"); !isDenied(err) {
		t.Errorf("anonymous register: %v, want permission denied", err)
	}
	if err := register(teamA.SecretID, "team-b", "other"); !isDenied(err) {
		t.Errorf("team-a token registering in team-b: %v, want permission denied", err)
	}
	if err := register(teamA.SecretID, "team-a", "mine"); err != nil {
		t.Fatalf("team-a token registering in team-a: %v", err)
	}
	if err := register(mgmt, "team-b", "theirs"); err != nil {
		t.Fatalf("management token registering in team-b: %v", err)
	}
	if err := register(structs.GenerateUUID(), "team-a", "forged"); !isDenied(err) {
		t.Errorf("unknown secret: %v, want permission denied", err)
	}

	list := func(token, ns string) ([]string, error) {
		req := &structs.JobListRequest{QueryOptions: structs.QueryOptions{Namespace: ns, AuthToken: token}}
		var resp structs.JobListResponse
		err := s.RPC(structs.RPCJobList, req, &resp)
		var ids []string
		for _, j := range resp.Jobs {
			ids = append(ids, j.Namespace+"/"+j.ID)
		}
		return ids, err
	}
	if _, err := list("", "team-a"); !isDenied(err) {
		t.Errorf("anonymous list: %v, want permission denied", err)
	}
	if _, err := list(teamA.SecretID, "team-b"); !isDenied(err) {
		t.Errorf("team-a token listing team-b: %v, want permission denied", err)
	}
	if got, err := list(teamA.SecretID, "*"); err != nil || !slices.Equal(got, []string{"team-a/mine"}) {
		t.Errorf("team-a token listing *: %v, %v; want only team-a/mine", got, err)
	}
	if got, err := list(mgmt, "*"); err != nil || len(got) != 2 {
		t.Errorf("management listing *: %v, %v; want both jobs", got, err)
	}

	// Reads of one object check its namespace.
	get := &structs.JobSpecificRequest{JobID: "theirs", QueryOptions: structs.QueryOptions{Namespace: "team-b", AuthToken: teamA.SecretID}}
	if err := s.RPC(structs.RPCJobGetJob, get, &structs.SingleJobResponse{}); !isDenied(err) {
		t.Errorf("team-a token reading team-b's job: %v, want permission denied", err)
	}

	// Management-only operations.
	restore := &SnapshotRestoreRequest{Archive: []byte("not an archive")}
	restore.AuthToken = teamA.SecretID
	if err := s.RPC(RPCSnapshotRestore, restore, &SnapshotRestoreResponse{}); !isDenied(err) {
		t.Errorf("snapshot restore with a client token: %v, want permission denied", err)
	}
	restore.AuthToken = ""
	if err := s.RPC(RPCSnapshotRestore, restore, &SnapshotRestoreResponse{}); !isDenied(err) {
		t.Errorf("anonymous snapshot restore: %v, want permission denied", err)
	}
	sched := &structs.SchedulerSetConfigRequest{Config: &structs.SchedulerConfiguration{}}
	sched.AuthToken = teamA.SecretID
	if err := s.RPC(structs.RPCOperatorSchedulerSetConfiguration, sched, &structs.SchedulerSetConfigurationResponse{}); !isDenied(err) {
		t.Errorf("scheduler config with a client token: %v, want permission denied", err)
	}

	// A second bootstrap is refused; token lists never carry secrets.
	if err := s.RPC(structs.RPCACLBootstrap, &structs.ACLTokenBootstrapRequest{}, &structs.ACLTokenUpsertResponse{}); !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("second bootstrap: %v, want invalid (already done)", err)
	}
	lt := &structs.ACLTokenListRequest{QueryOptions: structs.QueryOptions{AuthToken: teamA.SecretID}}
	if err := s.RPC(structs.RPCACLListTokens, lt, &structs.ACLTokenListResponse{}); !isDenied(err) {
		t.Errorf("token list with a client token: %v, want permission denied", err)
	}
	lt.AuthToken = mgmt
	var tokens structs.ACLTokenListResponse
	call(t, s, structs.RPCACLListTokens, lt, &tokens)
	if len(tokens.Tokens) != 2 {
		t.Errorf("token list has %d tokens, want 2", len(tokens.Tokens))
	}
	self := &structs.ACLTokenSelfRequest{QueryOptions: structs.QueryOptions{AuthToken: teamA.SecretID}}
	var me structs.SingleACLTokenResponse
	call(t, s, structs.RPCACLGetTokenSelf, self, &me)
	if me.Token == nil || me.Token.AccessorID != teamA.AccessorID {
		t.Errorf("token self = %+v, want %s", me.Token, teamA.AccessorID)
	}

	// A deleted policy grants nothing at once (no stale cache).
	del := &structs.ACLPolicyDeleteRequest{Names: []string{"team-a-write"}}
	del.AuthToken = mgmt
	call(t, s, structs.RPCACLDeletePolicies, del, &structs.GenericResponse{})
	if err := register(teamA.SecretID, "team-a", "after-delete"); !isDenied(err) {
		t.Errorf("register after its policy was deleted: %v, want permission denied", err)
	}
}

// TestACL_BadPolicyRefused: rules that do not parse are a bad request
// naming the place, and nothing is stored.
func TestACL_BadPolicyRefused(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	up := &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: "bad", Rules: `namespace "x" { policy = "sudo" }`}}}
	up.AuthToken = mgmt
	err := s.RPC(structs.RPCACLUpsertPolicies, up, &structs.GenericResponse{})
	if !errors.Is(err, structs.ErrInvalid) {
		t.Fatalf("bad policy: %v, want invalid", err)
	}
	if p, _ := s.State().ACLPolicyByName(nil, "bad"); p != nil {
		t.Errorf("bad policy stored: %+v", p)
	}
}

// TestNodeRPC_ForgedUpdateRefused: a node call must carry the secret of
// the node it names, and a node may report only on its own allocations:
// a forged "failed" is refused and nothing is rescheduled.
func TestNodeRPC_ForgedUpdateRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	victim := gpuNode("victim", 1)
	registerNode(t, c, victim)
	attacker := gpuNode("attacker", 1)
	registerNode(t, c, attacker)
	registerJob(t, s, gpuJob("train", structs.JobTypeService, 1, 1))
	waitFor(t, 5*time.Second, func() (bool, string) { return len(liveAllocs(t, s, "train")) == 1, "not placed" })
	alloc := liveAllocs(t, s, "train")[0]
	owner, other := victim, attacker
	if alloc.NodeID == attacker.ID {
		owner, other = attacker, victim
	}
	failed := &structs.Allocation{ID: alloc.ID, NodeID: owner.ID, JobID: alloc.JobID, Namespace: alloc.Namespace,
		ClientStatus: structs.AllocClientStatusFailed}
	tests := []struct {
		name string
		req  *structs.AllocUpdateRequest
	}{
		{"no secret", &structs.AllocUpdateRequest{NodeID: owner.ID, Alloc: []*structs.Allocation{failed}}},
		{"wrong secret", &structs.AllocUpdateRequest{NodeID: owner.ID, SecretID: other.SecretID, Alloc: []*structs.Allocation{failed}}},
		{"another node's allocation", &structs.AllocUpdateRequest{NodeID: other.ID, SecretID: other.SecretID, Alloc: []*structs.Allocation{failed}}},
	}
	for _, tt := range tests {
		if err := c.Call(structs.RPCNodeUpdateAlloc, tt.req, &structs.GenericResponse{}); !isDenied(structs.DecodeRPCError(err)) {
			t.Errorf("%s: %v, want permission denied", tt.name, err)
		}
	}
	// Re-registering a known node needs its secret.
	hijack := owner.Copy()
	hijack.SecretID = structs.GenerateUUID()
	err := c.Call(structs.RPCNodeRegister, &structs.NodeRegisterRequest{Node: hijack}, &structs.NodeUpdateResponse{})
	if !isDenied(structs.DecodeRPCError(err)) {
		t.Errorf("re-register with another secret: %v, want permission denied", err)
	}
	hb := &structs.NodeUpdateStatusRequest{NodeID: owner.ID, SecretID: other.SecretID, Status: structs.NodeStatusDown}
	if err := c.Call(structs.RPCNodeUpdateStatus, hb, &structs.NodeUpdateResponse{}); !isDenied(structs.DecodeRPCError(err)) {
		t.Errorf("heartbeat with another node's secret: %v, want permission denied", err)
	}
	// An accepted update would have been committed before its call
	// returned.
	live := liveAllocs(t, s, "train")
	if len(live) != 1 || live[0].ID != alloc.ID || live[0].ClientStatus == structs.AllocClientStatusFailed {
		t.Errorf("after forged calls: live = %+v, want the one untouched allocation", live)
	}
}

// publicMethods need no token: status and bootstrap questions, the
// token resolution agents ask for, and the node calls, which a node's
// secret authenticates instead (TestNodeRPC_ForgedUpdateRefused).
var publicMethods = map[string]bool{
	structs.RPCStatusPing: true, structs.RPCStatusLeader: true, structs.RPCStatusPeers: true,
	structs.RPCStatusRegions: true, structs.RPCStatusReadIndex: true, "Cluster.RaftState": true,
	structs.RPCACLBootstrap: true, structs.RPCACLResolveToken: true,
	structs.RPCNodeRegister: true, structs.RPCNodeUpdateStatus: true, structs.RPCNodeGetAllocs: true,
	structs.RPCNodeUpdateAlloc: true, structs.RPCNodeJobsExist: true,
	// Node calls of the service registry: the node's secret, not a token.
	structs.RPCServiceRegistrationUpsert: true, structs.RPCServiceRegistrationDeregister: true,
}

// TestACL_EveryMethodChecksTheToken walks every RPC method the server
// serves: with ACLs on, an anonymous call is denied unless the method is
// public, before the request's content is looked at.
func TestACL_EveryMethodChecksTheToken(t *testing.T) {
	t.Parallel()
	s, _ := aclServer(t)
	if len(s.methods) < 40 {
		t.Fatalf("only %d methods found", len(s.methods))
	}
	for name, m := range s.methods {
		if publicMethods[name] {
			continue
		}
		args := reflect.New(m.argType)
		if m.argType.Kind() == reflect.Pointer {
			args = reflect.New(m.argType.Elem())
		}
		reply := reflect.New(m.replyType.Elem())
		err := s.RPC(name, args.Interface(), reply.Interface())
		if !isDenied(err) {
			t.Errorf("%s without a token: %v, want permission denied", name, err)
		}
	}
}

// TestACL_ClientOpsCheckTheToken: every client operation is denied
// without a token before its target is looked up.
func TestACL_ClientOpsCheckTheToken(t *testing.T) {
	t.Parallel()
	s, _ := aclServer(t)
	for method := range clientOps {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := s.StreamCall(ctx, method, "", &structs.ClientAllocRequest{AllocID: structs.GenerateUUID()})
		cancel()
		if err == nil {
			conn.Close()
		}
		if !isDenied(err) {
			t.Errorf("%s without a token: %v, want permission denied", method, err)
		}
	}
}

// TestACL_BootstrapReset: a caller cannot reset the bootstrap by naming
// the index (the refusal shows it); only the leader's reset file can,
// once.
func TestACL_BootstrapReset(t *testing.T) {
	t.Parallel()
	s, first := aclServer(t)
	var again structs.ACLTokenUpsertResponse
	err := s.RPC(structs.RPCACLBootstrap, &structs.ACLTokenBootstrapRequest{}, &again)
	m := regexp.MustCompile(`reset index: (\d+)`).FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		t.Fatalf("second bootstrap: %v, want the reset index named", err)
	}
	index, _ := strconv.ParseUint(m[1], 10, 64)
	if err := s.RPC(structs.RPCACLBootstrap, &structs.ACLTokenBootstrapRequest{ResetIndex: index}, &again); !errors.Is(err, structs.ErrInvalid) {
		t.Fatalf("bootstrap with the reset index in the request: %v, want refused", err)
	}
	reset := filepath.Join(s.config.DataDir, aclBootstrapResetFile)
	if err := os.WriteFile(reset, []byte(m[1]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	call(t, s, structs.RPCACLBootstrap, &structs.ACLTokenBootstrapRequest{}, &again)
	if len(again.Tokens) != 1 || again.Tokens[0].SecretID == first {
		t.Fatalf("reset bootstrap = %+v, want a new management token", again.Tokens)
	}
	if _, err := os.Stat(reset); !os.IsNotExist(err) {
		t.Errorf("reset file after use: %v, want removed", err)
	}
	if err := s.RPC(structs.RPCACLBootstrap, &structs.ACLTokenBootstrapRequest{}, &again); !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("bootstrap after the reset: %v, want refused again", err)
	}
}

// TestACL_TokenLifecycle: expiry, narrowed policies and bad tokens.
func TestACL_TokenLifecycle(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	writer := clientToken(t, s, mgmt, "writer", `namespace "default" { policy = "write" }`)
	register := func(token string) error {
		req := &structs.JobRegisterRequest{Job: gpuJob(structs.GenerateUUID()[:8], structs.JobTypeBatch, 1, 0)}
		req.AuthToken = token
		return s.RPC(structs.RPCJobRegister, req, &structs.JobRegisterResponse{})
	}
	if err := register(writer.SecretID); err != nil {
		t.Fatalf("register with write: %v", err)
	}
	// Narrowing the policy narrows the token at its next request.
	up := &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: "writer", Rules: `namespace "default" { policy = "read" }`}}}
	up.AuthToken = mgmt
	call(t, s, structs.RPCACLUpsertPolicies, up, &structs.GenericResponse{})
	if err := register(writer.SecretID); !isDenied(err) {
		t.Errorf("register after the policy became read: %v, want denied", err)
	}

	create := func(tok *structs.ACLToken) (*structs.ACLToken, error) {
		req := &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{tok}}
		req.AuthToken = mgmt
		var resp structs.ACLTokenUpsertResponse
		err := s.RPC(structs.RPCACLUpsertTokens, req, &resp)
		if err != nil {
			return nil, err
		}
		return resp.Tokens[0], nil
	}
	bad := []*structs.ACLToken{
		{Name: "ghost", Policies: []string{"no-such-policy"}},
		{Name: "line\nbreak", Policies: []string{"writer"}},
		{Name: "short", Policies: []string{"writer"}, ExpirationTTL: time.Second},
		{Name: "mgmt-with-policy", Type: structs.ACLManagementToken, Policies: []string{"writer"}},
	}
	for _, tok := range bad {
		if _, err := create(tok); !errors.Is(err, structs.ErrInvalid) {
			t.Errorf("token %q: %v, want invalid", tok.Name, err)
		}
	}
	ttl, err := create(&structs.ACLToken{Name: "hour", Policies: []string{"writer"}, ExpirationTTL: time.Hour})
	if err != nil || ttl.ExpirationTime == nil || ttl.ExpirationTime.Sub(ttl.CreateTime) != time.Hour {
		t.Errorf("token with a 1h TTL = %+v, %v; want it to expire an hour after its creation", ttl, err)
	}

	// An expired token is refused (one written past its expiry, as a
	// token is found after its time).
	past := time.Now().Add(-time.Minute)
	expired := &structs.ACLToken{AccessorID: structs.GenerateUUID(), SecretID: structs.GenerateUUID(), Type: structs.ACLManagementToken, ExpirationTime: &past}
	if _, err := s.raftApply(structs.ACLTokenUpsertRequestType, &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{expired}}); err != nil {
		t.Fatal(err)
	}
	if err := register(expired.SecretID); !isDenied(err) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired management token: %v, want denied as expired", err)
	}

	// Garbage collection removes the expired token, and only it.
	if _, err := s.collectGarbage(time.Now(), gcThresholds{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.State().ACLTokenByAccessor(nil, expired.AccessorID); got != nil {
		t.Error("expired token still stored after a garbage collection")
	}
	for _, keep := range []string{ttl.AccessorID, writer.AccessorID} {
		if got, _ := s.State().ACLTokenByAccessor(nil, keep); got == nil {
			t.Errorf("token %s (not expired) collected", keep)
		}
	}
}

// TestACL_PrefixLookupsStayInNamespace: an ID prefix finds only what the
// token may read, so it tells nothing of other namespaces.
func TestACL_PrefixLookupsStayInNamespace(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	ns := &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "team-b"}}}
	ns.AuthToken = mgmt
	call(t, s, structs.RPCNamespaceUpsert, ns, &structs.GenericResponse{})
	job := gpuJob("theirs", structs.JobTypeBatch, 1, 0)
	job.Namespace = "team-b"
	reg := &structs.JobRegisterRequest{Job: job}
	reg.AuthToken = mgmt
	var resp structs.JobRegisterResponse
	call(t, s, structs.RPCJobRegister, reg, &resp)
	teamA := clientToken(t, s, mgmt, "team-a", `namespace "default" { policy = "read" }`)
	get := &structs.EvalSpecificRequest{EvalID: resp.EvalID[:4], QueryOptions: structs.QueryOptions{AuthToken: teamA.SecretID}}
	err := s.RPC(structs.RPCEvalGetEval, get, &structs.SingleEvalResponse{})
	if !errors.Is(err, structs.ErrNotFound) || strings.Contains(err.Error(), resp.EvalID) {
		t.Errorf("prefix of another namespace's evaluation: %v, want not found without its ID", err)
	}
	get.AuthToken = mgmt
	call(t, s, structs.RPCEvalGetEval, get, &structs.SingleEvalResponse{})
}
