// Package allocrunner runs one allocation on a client: it lays out the
// allocation's directories, runs one task runner per task through the
// task's driver, applies the group's restart policy, records task states
// and events, derives the allocation's client status, and reports every
// change through a callback.
//
// It owns the lifecycle of the allocation's tasks and nothing else: it
// never talks to servers (the client batches its updates), never picks
// resources (the scheduler did), and never deletes the allocation's
// directory (the logs must stay readable). See README.md for the flow.
package allocrunner
