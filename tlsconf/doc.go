// Package tlsconf owns Drover's TLS settings: it loads the agent's tls
// block files (CA, certificate, key) and builds the crypto/tls
// configurations of the RPC port's two sides (servers require and verify
// client certificates from the CA: mutual TLS), of the HTTPS API, and it
// swaps the key pair and CA atomically on Reload (SIGHUP), so that new
// handshakes use the new files while open connections keep theirs. It
// also creates the CA and the agent certificates for `drover tls`.
//
// Names: with verify_server_hostname, a server must present a
// certificate with the DNS name server.<region>.drover. The names
// Nomad's `nomad tls cert create` gives (server.<region>.nomad) are
// accepted too, so a cluster moving from Nomad keeps its PKI; both need
// the configured CA, and a client certificate (client.<region>.drover)
// is never taken for a server's.
//
// It knows nothing of the RPC protocol bytes, servers or clients: it
// must not import server, client or command packages. Minimum TLS 1.2.
package tlsconf
