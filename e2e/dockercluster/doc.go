// Package dockercluster is Drover's fault-injection suite on real
// containers: it builds a static drover, puts it in a FROM scratch image
// (this machine's Docker engine has no registry), starts servers and
// clients with simulated GPUs on a private Docker network, and kills,
// partitions and restarts them while a workload registers jobs. A checker
// then verifies that every acknowledged registration is present, that no
// GPU instance is held by two live allocations, and that every job
// reaches its desired count, and prints a summary with the counts.
//
// The cluster runs secured as in production: mutual TLS on RPC and HTTPS
// with certificates from a CA the test creates, encrypted gossip, and
// ACLs the test bootstraps. The workload registers with a token scoped to
// the default namespace, the checker reads with the management token, and
// the suite checks that a server refuses plaintext HTTP and RPC, HTTPS
// without a client certificate, a request without a token and a
// management call with the workload's token.
//
// `go test ./e2e/dockercluster` runs the short form (CI); with
// DROVER_E2E_LONG=1 (`make e2e`) it runs the long one: at least 200 jobs,
// the leader killed and partitioned, a client killed, then everything
// restarted. Without a reachable Docker engine the suite is skipped (it
// fails when CI=true). It has no non-test code.
package dockercluster
