// Package acl owns Nomad's ACL policy language and the compiled ACL that
// answers "may this token do that": Parse turns policy rules (HCL) into a
// *Policy, New merges a token's policies into an *ACL, and the Allow*
// methods decide.
//
// The package is pure: it reads no files, keeps no state between calls,
// takes no clock and logs nothing. It must not import Drover packages
// other than structs (it imports none today), and it knows nothing about
// tokens, the state store or HTTP: resolving a secret to policies, and
// caching the result, is the server's job.
//
// # Language
//
// A policy is a list of blocks; values are string literals and lists of
// string literals (no variables, functions or operators):
//
//	namespace "default" {            # a name, or a glob with * wildcards
//	  policy       = "read"          # deny, read, write or scale
//	  capabilities = ["submit-job"]  # added to what policy grants
//	}
//	node     { policy = "read" }     # deny, read or write; also agent,
//	operator { policy = "write" }    # quota
//	queue "gpu-*" { policy = "write" } # Drover: deny, read or write
//
// Nomad's node_pool, host_volume and plugin blocks and a namespace's
// variables block are checked and then ignored: Drover does not enforce
// them yet, but real Nomad policies that use them parse.
//
// # Decisions
//
// The rule for a namespace (or queue) is the one named exactly, else the
// glob whose wildcards match the fewest characters (the longest literal
// part). Rules of the same name from several policies merge: capabilities
// add up, and a deny in any of them denies. For node, agent, operator and
// quota the strongest of read and write wins, unless any policy says
// deny. A management ACL allows everything.
package acl
