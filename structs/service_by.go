package structs

// RPC methods that list the service registrations of one job or one
// allocation (Nomad's /v1/job/<id>/services and
// /v1/allocation/<id>/services); both answer a
// ServiceRegistrationByNameResponse.
const (
	RPCServiceRegistrationsByJob   = "ServiceRegistration.ByJob"
	RPCServiceRegistrationsByAlloc = "ServiceRegistration.ByAlloc"
)
