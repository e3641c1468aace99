// Package command is Drover's CLI: `drover agent`, `drover job ...`,
// `drover node ...`, `drover alloc ...` and `drover version`, built on
// github.com/hashicorp/cli with stdlib flag parsing (so -detach and
// --detach both work, and flags may follow positional arguments).
//
// Every command except agent talks to an agent through package api; job
// files are parsed locally with package jobspec so errors carry
// file:line,col positions before anything is sent. Formatting is done by
// pure functions over structs values, which the tests exercise directly.
//
// Nothing imports command; main.go calls Main.
package command
