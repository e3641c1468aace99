// Package template renders a task's template blocks: Go text/template
// with Nomad's everyday functions (env, nomadVar, nomadVarList,
// nomadVarExists and string helpers), output bounded, into files inside
// the task directory that neither .. nor a symlink can move out of. It
// also parses rendered env files.
//
// It owns no goroutines and no watching: the alloc runner's template
// hook renders, watches the variables a render read, and applies the
// change mode. Consul and Vault functions are refused with a message
// naming them.
package template
