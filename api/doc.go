// Package api is the Go client for Drover's HTTP API (/v1, Nomad's shapes).
// The CLI uses it, and so can users' programs.
//
// It owns the wire details: addresses, query parameters (namespace, region,
// prefix, blocking index and wait), the X-Nomad-* response headers and
// turning non-2xx answers into errors that keep the status code. Bodies are
// the types of package structs. It must not import jobspec, server or
// client packages: job files are parsed by the caller (or by the agent
// through Jobs.ParseHCL).
package api
