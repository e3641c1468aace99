package structs

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Raft message types of the service registry (Nomad's built-in service
// discovery, provider = "nomad"). Numbered apart from the other ranges;
// never renumber.
const (
	ServiceRegistrationUpsertRequestType        MessageType = 100
	ServiceRegistrationDeleteByIDRequestType    MessageType = 101
	ServiceRegistrationDeleteByAllocRequestType MessageType = 102
)

// RPC methods of the service registry.
const (
	RPCServiceRegistrationUpsert     = "ServiceRegistration.Upsert"
	RPCServiceRegistrationDeleteByID = "ServiceRegistration.DeleteByID"
	RPCServiceRegistrationDeregister = "ServiceRegistration.DeregisterAllocs"
	RPCServiceRegistrationList       = "ServiceRegistration.List"
	RPCServiceRegistrationGetService = "ServiceRegistration.GetService"

	// RPCClientAllocChecks is a client operation (client_ops.go):
	// ClientAllocRequest -> map of check ID to the check's latest result.
	RPCClientAllocChecks = "ClientAlloc.Checks"
)

// Service providers. Drover has only its own registry ("nomad", as in
// Nomad); a service without a provider registers there too.
const (
	ServiceProviderNomad  = "nomad"
	ServiceProviderConsul = "consul"
)

// Check types Drover runs on the client.
const (
	ServiceCheckHTTP   = "http"
	ServiceCheckTCP    = "tcp"
	ServiceCheckScript = "script"
)

// Service address modes.
const (
	AddressModeAuto   = "auto"
	AddressModeHost   = "host"
	AddressModeAlloc  = "alloc"
	AddressModeDriver = "driver"
)

// Bounds of services and checks.
const (
	MaxServicesPerGroup = 64
	MaxChecksPerService = 16
	MaxServiceTags      = 64
	MaxServiceNameLen   = 63
	MinCheckInterval    = time.Second
	// MinCheckTimeout is Nomad's: a shorter timeout fails every run.
	MinCheckTimeout       = time.Second
	MaxCheckInterval      = 24 * time.Hour
	maxCheckThreshold     = 1000
	maxCheckBody          = 64 << 10
	MaxRegistrationsBatch = 256
	// MaxRegistrationField bounds a registration's address and each tag
	// (the servers refuse longer ones from clients).
	MaxRegistrationField = 256
)

// ErrServiceConsul refuses a Consul-provided service (a bad request).
var ErrServiceConsul = NewCodedError(CodeBadRequest, `Drover has no Consul integration; use provider = "nomad"`)

// serviceNameRe is Nomad's (RFC 1123) service name: lower-case letters,
// digits and dashes, not starting or ending with a dash. Nomad lets
// ${...} interpolation in; Drover names are literal.
var serviceNameRe = regexp.MustCompile(`^(?i:[a-z0-9]|[a-z0-9][a-z0-9\-]*[a-z0-9])$`)

// Service is a service block of a group or task (Nomad's api.Service):
// a name the allocation registers in the service registry once its
// tasks run, with the address and port it serves on, and checks.
type Service struct {
	Name string
	// TaskName is the task a group service belongs to (checks of type
	// script run in it); a task's service is its task's.
	TaskName string `json:",omitempty"`
	// PortLabel is a port label of the group's network or a port number.
	PortLabel   string `json:",omitempty"`
	AddressMode string `json:",omitempty"`
	Address     string `json:",omitempty"`
	Tags        []string
	CanaryTags  []string          `json:",omitempty"`
	Meta        map[string]string `json:",omitempty"`
	Provider    string
	OnUpdate    string `json:",omitempty"`
	// Cluster is Nomad Enterprise's Consul cluster; Nomad's tools send
	// "default", which is all Drover accepts.
	Cluster string `json:",omitempty"`
	Checks  []*ServiceCheck
	// CheckRestart is the default for the service's checks.
	CheckRestart *CheckRestart `json:",omitempty"`
}

// ServiceCheck is a health check of a service (Nomad's api.ServiceCheck).
type ServiceCheck struct {
	Name     string
	Type     string
	Path     string              `json:",omitempty"`
	Method   string              `json:",omitempty"`
	Protocol string              `json:",omitempty"`
	Header   map[string][]string `json:",omitempty"`
	// Body is sent with an http check's request.
	Body string `json:",omitempty"`
	// TLSSkipVerify skips verifying an https check's certificate.
	TLSSkipVerify bool     `json:",omitempty"`
	Command       string   `json:",omitempty"`
	Args          []string `json:",omitempty"`
	TaskName      string   `json:",omitempty"`
	PortLabel     string   `json:",omitempty"`
	// AddressMode of the check ("" : the service's).
	AddressMode            string `json:",omitempty"`
	Interval               time.Duration
	Timeout                time.Duration
	CheckRestart           *CheckRestart `json:",omitempty"`
	OnUpdate               string        `json:",omitempty"`
	SuccessBeforePassing   int           `json:",omitempty"`
	FailuresBeforeCritical int           `json:",omitempty"`
}

// CheckRestart restarts a task whose check fails Limit times in a row,
// Grace after the task started (Nomad's api.CheckRestart).
type CheckRestart struct {
	Limit          int
	Grace          time.Duration
	IgnoreWarnings bool
}

// RegistrationIDPrefix is how the ID of every registration of an
// allocation starts (Nomad's "_nomad-task-<alloc ID>-"): the servers
// refuse others, so IDs of different allocations never collide.
func RegistrationIDPrefix(allocID string) string { return "_nomad-task-" + allocID + "-" }

// ServiceRegistration is one allocation's instance of a service in the
// registry (Nomad's api.ServiceRegistration).
type ServiceRegistration struct {
	ID          string
	ServiceName string
	Namespace   string
	NodeID      string
	Datacenter  string
	JobID       string
	AllocID     string
	Tags        []string
	Address     string
	Port        int
	CreateIndex uint64
	ModifyIndex uint64
}

// ServiceRegistrationStub is one service name of a namespace in a list.
type ServiceRegistrationStub struct {
	ServiceName string
	Tags        []string
}

// ServiceRegistrationListStub is one namespace's services.
type ServiceRegistrationListStub struct {
	Namespace string
	Services  []*ServiceRegistrationStub
}

// Copy returns a deep copy.
func (s *Service) Copy() *Service {
	if s == nil {
		return nil
	}
	c := *s
	c.Tags = slices.Clone(s.Tags)
	c.CanaryTags = slices.Clone(s.CanaryTags)
	c.Meta = maps.Clone(s.Meta)
	c.CheckRestart = s.CheckRestart.Copy()
	if s.Checks != nil {
		c.Checks = make([]*ServiceCheck, len(s.Checks))
		for i, ck := range s.Checks {
			c.Checks[i] = ck.Copy()
		}
	}
	return &c
}

// Copy returns a deep copy.
func (c *ServiceCheck) Copy() *ServiceCheck {
	if c == nil {
		return nil
	}
	out := *c
	out.Args = slices.Clone(c.Args)
	if c.Header != nil {
		out.Header = make(map[string][]string, len(c.Header))
		for k, v := range c.Header {
			out.Header[k] = slices.Clone(v)
		}
	}
	out.CheckRestart = c.CheckRestart.Copy()
	return &out
}

// Copy returns a copy.
func (r *CheckRestart) Copy() *CheckRestart {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

// Copy returns a deep copy.
func (r *ServiceRegistration) Copy() *ServiceRegistration {
	if r == nil {
		return nil
	}
	c := *r
	c.Tags = slices.Clone(r.Tags)
	return &c
}

func copyServices(in []*Service) []*Service {
	if in == nil {
		return nil
	}
	out := make([]*Service, len(in))
	for i, s := range in {
		out[i] = s.Copy()
	}
	return out
}

// Canonicalize fills defaults: the name (Nomad's <job>-<group>[-<task>]),
// the provider ("nomad"), a check's name, method and task, and the
// service's check_restart on checks that set none.
func (s *Service) Canonicalize(jobName, groupName, taskName string) {
	if s.Name == "" {
		s.Name = jobName + "-" + groupName
		if taskName != "" {
			s.Name += "-" + taskName
		}
	}
	if s.Provider == "" {
		s.Provider = ServiceProviderNomad
	}
	if s.TaskName == "" {
		s.TaskName = taskName
	}
	for i, c := range s.Checks {
		if c == nil {
			continue
		}
		if c.Name == "" {
			c.Name = "service: " + strconv.Quote(s.Name) + " check"
			if i > 0 {
				c.Name += " " + strconv.Itoa(i)
			}
		}
		if c.Type == ServiceCheckHTTP && c.Method == "" {
			c.Method = "GET"
		}
		if c.CheckRestart == nil {
			c.CheckRestart = s.CheckRestart.Copy()
		}
		if c.TaskName == "" {
			c.TaskName = s.TaskName
		}
	}
}

// PortNumber returns the port a label stands for when it is a number.
func PortNumber(label string) (int, bool) {
	n, err := strconv.Atoi(label)
	if err != nil || n < 1 || n > 65535 {
		return 0, false
	}
	return n, true
}

// Validate checks a canonicalized service; tasks are the group's tasks
// by name and ports its port labels.
func (s *Service) Validate(tasks map[string]*Task, ports map[string]bool) error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("service %q: "+format, append([]any{s.Name}, args...)...))
	}
	if !serviceNameRe.MatchString(s.Name) || len(s.Name) > MaxServiceNameLen {
		add("name must be 1-63 letters, digits and dashes, not starting or ending with a dash")
	}
	if s.Cluster != "" && s.Cluster != "default" {
		add("cluster %q: %w", s.Cluster, ErrServiceConsul)
	}
	switch s.Provider {
	case ServiceProviderNomad:
	case ServiceProviderConsul:
		add("provider %q: %w", s.Provider, ErrServiceConsul)
	default:
		add("provider %q is not %q", s.Provider, ServiceProviderNomad)
	}
	switch s.AddressMode {
	case "", AddressModeAuto, AddressModeHost, AddressModeAlloc, AddressModeDriver:
	default:
		add("address_mode %q is not one of auto, host, alloc, driver", s.AddressMode)
	}
	if s.Address != "" && s.AddressMode != AddressModeAuto && s.AddressMode != "" {
		add("address can only be set with address_mode = \"auto\"")
	}
	if len(s.Tags) > MaxServiceTags || len(s.CanaryTags) > MaxServiceTags {
		add("at most %d tags", MaxServiceTags)
	}
	if len(s.Address) > MaxRegistrationField {
		add("address of %d bytes: at most %d", len(s.Address), MaxRegistrationField)
	}
	for _, tag := range slices.Concat(s.Tags, s.CanaryTags) {
		if len(tag) > MaxRegistrationField {
			add("tag of %d bytes: at most %d", len(tag), MaxRegistrationField)
			break
		}
	}
	if err := checkPortLabel(s.PortLabel, ports); err != nil {
		add("%w", err)
	}
	if s.TaskName != "" && tasks[s.TaskName] == nil {
		add("task %q is not in the group", s.TaskName)
	}
	if len(s.Checks) > MaxChecksPerService {
		add("%d checks: at most %d", len(s.Checks), MaxChecksPerService)
	}
	for _, c := range s.Checks {
		if err := c.Validate(s, tasks, ports); err != nil {
			add("%w", err)
		}
	}
	return errors.Join(errs...)
}

func checkPortLabel(label string, ports map[string]bool) error {
	if label == "" || ports[label] {
		return nil
	}
	if _, ok := PortNumber(label); ok {
		return nil
	}
	return fmt.Errorf("port %q is neither a port number nor a port label of the group's network", label)
}

// Validate checks one check of s.
func (c *ServiceCheck) Validate(s *Service, tasks map[string]*Task, ports map[string]bool) error {
	if c == nil {
		return errors.New("check: missing")
	}
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("check %q: "+format, append([]any{c.Name}, args...)...))
	}
	switch c.Type {
	case ServiceCheckHTTP:
		if c.Path == "" {
			add("an http check needs a path")
		}
		if c.Protocol != "" && c.Protocol != "http" && c.Protocol != "https" {
			add("protocol %q is not http or https", c.Protocol)
		}
		if len(c.Body) > maxCheckBody {
			add("body of %d bytes: at most %d", len(c.Body), maxCheckBody)
		}
		if err := checkHeader(c.Header); err != nil {
			add("%w", err)
		}
		if c.Method != "" && (!validHeaderName(c.Method) || len(c.Method) > 32) {
			add("method %q is not an HTTP method", clip(c.Method))
		}
	case ServiceCheckTCP:
	case ServiceCheckScript:
		if c.Command == "" {
			add("a script check needs a command")
		}
		t := tasks[c.TaskName]
		switch {
		case c.TaskName == "":
			add("a script check needs a task (the task to run the command in)")
		case t == nil:
			add("task %q is not in the group", c.TaskName)
		case !execCapableDriver(t.Driver):
			add("task %q: driver %q cannot run commands in the task", c.TaskName, t.Driver)
		}
	default:
		add("type %q is not one of http, tcp, script", c.Type)
	}
	if c.Type != ServiceCheckScript {
		label := c.PortLabel
		if label == "" {
			label = s.PortLabel
		}
		if label == "" {
			add("an %s check needs a port (on the check or its service)", c.Type)
		} else if err := checkPortLabel(label, ports); err != nil {
			add("%w", err)
		}
	}
	if c.Interval < MinCheckInterval || c.Interval > MaxCheckInterval {
		add("interval %v must be between %v and %v", c.Interval, MinCheckInterval, MaxCheckInterval)
	}
	if c.Timeout < MinCheckTimeout || c.Timeout > MaxCheckInterval {
		add("timeout %v must be between %v and %v", c.Timeout, MinCheckTimeout, MaxCheckInterval)
	}
	if c.SuccessBeforePassing < 0 || c.SuccessBeforePassing > maxCheckThreshold ||
		c.FailuresBeforeCritical < 0 || c.FailuresBeforeCritical > maxCheckThreshold {
		add("success_before_passing and failures_before_critical must be 0-%d", maxCheckThreshold)
	}
	if r := c.CheckRestart; r != nil && (r.Limit < 0 || r.Limit > maxCheckThreshold || r.Grace < 0) {
		add("check_restart limit must be 0-%d and grace not negative", maxCheckThreshold)
	}
	switch c.OnUpdate {
	case "", "require_healthy", "ignore_warnings", "ignore":
	default:
		add("on_update %q is not one of require_healthy, ignore_warnings, ignore", c.OnUpdate)
	}
	return errors.Join(errs...)
}

// Bounds of an http check's header block.
const (
	maxCheckHeaders     = 64
	maxCheckHeaderBytes = 16 << 10
)

// checkHeader bounds an http check's headers and refuses names that are
// not HTTP tokens and values with control characters (a CR or LF would
// otherwise fail every run of the check on the client).
func checkHeader(h map[string][]string) error {
	if len(h) > maxCheckHeaders {
		return fmt.Errorf("%d headers: at most %d", len(h), maxCheckHeaders)
	}
	size := 0
	for name, values := range h {
		if !validHeaderName(name) {
			return fmt.Errorf("header name %q is not an HTTP token", clip(name))
		}
		size += len(name)
		for _, v := range values {
			size += len(v)
			if strings.ContainsFunc(v, func(r rune) bool { return r != '\t' && (r < ' ' || r == 0x7f) }) {
				return fmt.Errorf("header %q: value has a control character", clip(name))
			}
		}
	}
	if size > maxCheckHeaderBytes {
		return fmt.Errorf("headers of %d bytes: at most %d", size, maxCheckHeaderBytes)
	}
	return nil
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		ok := r < 0x7f && (r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
		if !ok {
			return false
		}
	}
	return true
}

// execCapableDriver reports whether a driver can run a command inside a
// task (script checks).
func execCapableDriver(driver string) bool {
	switch driver {
	case "raw_exec", "exec", "docker":
		return true
	}
	return false
}

// validateGroupServices checks the services of a group and its tasks.
func (tg *TaskGroup) validateServices() error {
	tasks := make(map[string]*Task, len(tg.Tasks))
	for _, t := range tg.Tasks {
		tasks[t.Name] = t
	}
	ports := map[string]bool{}
	nets := slices.Clone(tg.Networks)
	for _, t := range tg.Tasks {
		if t.Resources != nil {
			nets = append(nets, t.Resources.Networks...)
		}
	}
	for _, n := range nets {
		if n == nil {
			continue
		}
		for _, p := range n.ReservedPorts {
			ports[p.Label] = true
		}
		for _, p := range n.DynamicPorts {
			ports[p.Label] = true
		}
	}
	all := tg.AllServices()
	if len(all) > MaxServicesPerGroup {
		return fmt.Errorf("%d services: at most %d per group", len(all), MaxServicesPerGroup)
	}
	var errs []error
	// Two services of one owner (the group or a task) with the same name
	// and port would share a registration ID, and one would replace the
	// other (Nomad refuses them too).
	if err := duplicateServices(tg); err != nil {
		errs = append(errs, err)
	}
	for _, s := range all {
		if s == nil {
			errs = append(errs, errors.New("service: missing"))
			continue
		}
		if err := s.Validate(tasks, ports); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// duplicateServices refuses two services of one owner (the group, or a
// task) with the same name and port: they would share a registration ID
// and one would replace the other. Nomad refuses them too.
func duplicateServices(tg *TaskGroup) error {
	check := func(owner string, services []*Service) error {
		seen := map[[2]string]bool{}
		for _, s := range services {
			if s == nil {
				continue
			}
			key := [2]string{s.Name, s.PortLabel}
			if seen[key] {
				return fmt.Errorf("service %q (port %q) of %s is duplicate", s.Name, s.PortLabel, owner)
			}
			seen[key] = true
		}
		return nil
	}
	errs := []error{check("the group", tg.Services)}
	for _, t := range tg.Tasks {
		if t != nil {
			errs = append(errs, check(fmt.Sprintf("task %q", t.Name), t.Services))
		}
	}
	return errors.Join(errs...)
}

// AllServices returns the group's services and its tasks', in order.
func (tg *TaskGroup) AllServices() []*Service {
	out := slices.Clone(tg.Services)
	for _, t := range tg.Tasks {
		out = append(out, t.Services...)
	}
	return out
}

// canonicalizeServices fills the defaults of the group's services.
func (tg *TaskGroup) canonicalizeServices(jobName string) {
	for _, s := range tg.Services {
		if s != nil {
			s.Canonicalize(jobName, tg.Name, "")
		}
	}
	for _, t := range tg.Tasks {
		if t == nil {
			continue
		}
		for _, s := range t.Services {
			if s != nil {
				s.Canonicalize(jobName, tg.Name, t.Name)
			}
		}
	}
}

// ServiceRegistrationUpsertRequest registers service instances; a client
// sends it for allocations on its own node (NodeID and SecretID prove
// the node; the Raft entry carries neither secret).
type ServiceRegistrationUpsertRequest struct {
	NodeID   string
	SecretID string
	Services []*ServiceRegistration
	WriteRequest
}

// ServiceRegistrationDeleteByIDRequest removes one registration of the
// request's namespace.
type ServiceRegistrationDeleteByIDRequest struct {
	ID string
	WriteRequest
}

// ServiceRegistrationDeleteByAllocRequest removes the registrations of
// allocations (a client deregistering an allocation that stopped).
type ServiceRegistrationDeleteByAllocRequest struct {
	NodeID   string
	SecretID string
	AllocIDs []string
	WriteRequest
}

// ServiceRegistrationListRequest lists the services of the request's
// namespace ("*": every namespace the caller may read).
type ServiceRegistrationListRequest struct {
	QueryOptions
}

// ServiceRegistrationListResponse is the list, grouped by namespace.
type ServiceRegistrationListResponse struct {
	Services []*ServiceRegistrationListStub
	QueryMeta
}

// ServiceRegistrationByNameRequest asks for the registrations of one
// service of the request's namespace.
type ServiceRegistrationByNameRequest struct {
	ServiceName string
	// Tag, when set, keeps the registrations that carry it (?tag=).
	Tag string
	QueryOptions
}

// ServiceRegistrationByNameResponse holds them.
type ServiceRegistrationByNameResponse struct {
	Services []*ServiceRegistration
	QueryMeta
}
