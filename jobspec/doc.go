// Package jobspec turns job files into *structs.Job: Nomad's HCL2 job
// syntax (job, group, task, constraint, affinity, restart, reschedule
// (job and group level; a group's block overrides the job's), resources,
// device with Drover's topology/memory/compute extensions) and Nomad's API
// JSON ({"Job": {...}} or a bare job object).
//
// Interpolations such as "${attr.kernel.name}", "${device.attr.memory}"
// or "${NOMAD_ALLOC_ID}" are kept exactly as written, in every string
// (driver config and env included): the scheduler and the client resolve
// them, not the parser. The parser evaluates no variables and calls no
// functions.
//
// Every problem is reported with its position as "file:line,col: summary;
// detail". Unknown arguments and blocks are errors, like in Nomad; Nomad
// blocks that Drover does not implement yet (update, network, service,
// ...) are errors that say so, never silently dropped.
//
// jobspec does no I/O beyond ParseFile reading its one file, and must not
// import anything above structs.
package jobspec
