// Package jobspec turns job files into *structs.Job: Nomad's HCL2 job
// syntax (job, group, task, constraint, affinity, restart, reschedule
// (job and group level; a group's block overrides the job's), resources,
// device with Drover's topology/memory/compute extensions) and Nomad's API
// JSON ({"Job": {...}} or a bare job object).
//
// HCL2 inputs as in Nomad (variables.go, locals.go, functions.go): variable
// blocks with types, defaults, validation and sensitive values; the
// variables shorthand; locals; values from NOMAD_VAR_/DROVER_VAR_, -var-file
// and -var (Options); var.* and local.* anywhere, with Nomad's functions,
// every one bounded (eval.go). Interpolations of anything else, such as
// "${attr.kernel.name}", "${device.attr.memory}" or "${NOMAD_ALLOC_ID}",
// are kept exactly as written in every string (driver config and env
// included): the scheduler and the client resolve them, not the parser.
//
// Every problem is reported with its position as "file:line,col: summary;
// detail". Unknown arguments and blocks are errors, like in Nomad; Nomad
// blocks that Drover does not implement yet (update, network, service,
// ...) are errors that say so, never silently dropped.
//
// jobspec does no I/O beyond ParseFile reading its one file and, only
// when Options.FileDir is set (the CLI), the files that file(),
// fileexists() and templatefile() name; it must not import anything
// above structs.
package jobspec
