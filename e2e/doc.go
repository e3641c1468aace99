// Package e2e holds Drover's end-to-end tests: they build the real drover
// binary, start agent processes on loopback with real Raft, BoltDB and
// raw_exec tasks, and drive them through the CLI, the HTTP API and the
// official Nomad Go client. It has no non-test code.
package e2e
